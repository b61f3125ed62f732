public import Accounts
public import Foundation
import SQLKit

/// An account's sessions, one per device: the list, ending one or all others, and when each was last checked.
extension SQLAccountStore {
    /// Queues the session check at `minute` for `last_seen_at` (``SessionKeeper/noteSeen(tokenHash:minute:)``): the
    /// keeper's ``SeenWriter`` writes it beside the answers, once a minute per session at most.
    public func noteSeen(tokenHash: String, at minute: Date) {
        keeper.noteSeen(tokenHash: tokenHash, minute: minute)
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
    public func endOtherSessions(
        accountID: String,
        keepingTokenHash: String?,
        reason: SessionEndReason,
        cause: SignOutCause,
        at: Date
    ) async throws -> Int {
        let others = try await database.read(
            """
            SELECT token_hash FROM sessions
            WHERE account_id = \(bind: accountID) AND ended_at IS NULL AND expires_at > \(bind: at.milliseconds)
            """
        ).map { try $0.string("token_hash") }.filter { $0 != keepingTokenHash }
        guard !others.isEmpty else { return 0 }
        // The replicas are told these sessions, or, past a few dozen (an announcement must stay short), the account's.
        // With none kept (an operator's "end all sessions") the account's: a sign-in that commits between the read
        // and the change ends too.
        let target: SessionEndTarget = others.count <= 32 && keepingTokenHash != nil ? .sessions(others) : .accounts([accountID])
        return try await keeper.ending(target) { change in
            let ended =
                keepingTokenHash == nil
                ? try await change.endLiveSessions(reason: reason, at: at.milliseconds)
                : try await change.endSessions(tokenHashes: others, reason: reason, at: at.milliseconds)
            try await Self.insertSignOuts(sessionIDs: ended, cause: cause, at: at, on: change.db)
            return ended.count
        }
    }
}
