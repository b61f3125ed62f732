public import Accounts
public import Foundation
import SQLKit

/// An account's sessions, one per device: the list, ending one or all others, and when each was last checked.
extension SQLAccountStore {
    /// Records a session check at `minute` unless the session already shows it; a replica's memory of the account's
    /// sessions goes when it did, so the next check reads the minute just written instead of writing it again.
    public func recordSeen(tokenHash: String, accountID: String, at minute: Date) async throws {
        let updated = try await database.transaction { db in
            try await db.raw(
                """
                UPDATE sessions SET last_seen_at = \(bind: minute.milliseconds)
                WHERE token_hash = \(bind: tokenHash) AND (last_seen_at IS NULL OR last_seen_at < \(bind: minute.milliseconds))
                RETURNING token_hash
                """
            ).all()
        }
        if !updated.isEmpty { database.changed(account: accountID) }
    }

    /// The account's sessions live at `now`, newest first.
    public func liveSessions(accountID: String, now: Date) async throws -> [SessionRecord] {
        try await database.read(
            """
            SELECT \(unsafeRaw: Self.sessionColumns) FROM sessions s
            WHERE s.account_id = \(bind: accountID) AND s.ended_at IS NULL AND s.expires_at > \(bind: now.milliseconds)
            ORDER BY s.created_at DESC, s.id DESC
            """
        ).map(Self.session(from:))
    }

    /// Ends the account's live session `id`: found first, so that replicas are told exactly which session ends.
    public func endSession(id: String, accountID: String, reason: SessionEndReason, cause: SignOutCause, at: Date) async throws -> Bool {
        let found = try await database.read(
            """
            SELECT token_hash FROM sessions
            WHERE id = \(bind: id) AND account_id = \(bind: accountID) AND ended_at IS NULL
                AND expires_at > \(bind: at.milliseconds)
            """
        )
        guard let tokenHash = try found.first?.string("token_hash") else { return false }
        return try await endSession(tokenHash: tokenHash, reason: reason, cause: cause, at: at)
    }

    /// Ends every live session of the account but one: read first, so that a change that would end nothing commits
    /// nothing and announces nothing to the replicas, and the replicas are told exactly which sessions end.
    public func endOtherSessions(accountID: String, keepingTokenHash: String, reason: SessionEndReason, at: Date) async throws -> Int {
        let others = try await database.read(
            """
            SELECT token_hash FROM sessions
            WHERE account_id = \(bind: accountID) AND token_hash <> \(bind: keepingTokenHash) AND ended_at IS NULL
                AND expires_at > \(bind: at.milliseconds)
            """
        ).map { try $0.string("token_hash") }
        guard !others.isEmpty else { return 0 }
        return try await database.endingSessions(.sessions(others)) { db in
            let ended = try await db.raw(
                """
                UPDATE sessions SET ended_at = \(bind: at.milliseconds), end_reason = \(bind: reason.rawValue)
                WHERE token_hash IN (\(binds: others)) AND ended_at IS NULL
                RETURNING id
                """
            ).all().map { try $0.string("id") }
            try await Self.insertSignOuts(sessionIDs: ended, cause: .otherDevice, at: at, on: db)
            return ended.count
        }
    }
}
