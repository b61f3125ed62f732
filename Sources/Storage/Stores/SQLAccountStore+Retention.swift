public import Accounts
public import Foundation
import SQLKit

extension SQLAccountStore: RetentionStore {
    /// Each target's table, key, and the condition that a row is past its cutoff (`?` stands for the cutoff).
    private static func table(_ target: RetentionTarget) -> (name: String, key: String, expired: String) {
        switch target {
        case .nonces: ("nonces", "hash", "expires_at <=")
        case .webFlowStates: ("web_flow_states", "state_hash", "expires_at <=")
        case .processedNotifications: ("notification_inbox", "jti", "processed_at <=")
        case .deliveredWebhooks: ("webhook_outbox", "id", "status = 'delivered' AND delivered_at <=")
        case .endedSessions: ("sessions", "token_hash", "ended_at <=")
        case .expiredSessions: ("sessions", "token_hash", "expires_at <=")
        case .history: ("account_events", "id", "occurred_at <=")
        case .sessionExpiries: ("sessions", "token_hash", "ended_at IS NULL AND expires_at <=")
        case .consoleLogins: ("operator_logins", "token_hash", "expires_at <=")
        case .manualRevocations: ("manual_revocations", "account_id", "deleted_at <=")
        }
    }

    /// The `orchard_settings` row that says up to when expired sessions have their `signed_out` event.
    private static let expiriesRecordedUntil = "history_expiries_until"

    /// Up to when expired sessions have their event, as SQL: from the oldest session row kept when never recorded.
    private static func expiriesRecordedUntil(at cutoff: Date) -> SQLQueryString {
        """
        COALESCE((SELECT CAST(value AS BIGINT) FROM orchard_settings WHERE name = \(bind: expiriesRecordedUntil)),
            \(bind: cutoff.milliseconds - 7 * 86_400_000))
        """
    }

    /// Adds the `signed_out` (`expired`) event of up to `limit` sessions that expired after the recorded instant and at
    /// or before `cutoff` without being ended, oldest first, and moves the recorded instant on, in one transaction.
    /// The event's id is the session's (as for every `signed_out`), so that two replicas doing this at once add one.
    private func recordExpiries(before cutoff: Date, limit: Int) async throws -> Int {
        try await database.transaction { db in
            let expired = try await db.raw(
                """
                SELECT id, expires_at FROM sessions
                WHERE expires_at > \(Self.expiriesRecordedUntil(at: cutoff)) AND expires_at <= \(bind: cutoff.milliseconds) AND ended_at IS NULL
                ORDER BY expires_at LIMIT \(bind: limit)
                """
            ).all()
            let ids = try expired.map { try $0.string("id") }
            if !ids.isEmpty {
                // Only for accounts that still exist, holding them (PostgreSQL: `FOR KEY SHARE`) until this commits: a
                // deletion that removed the account first is waited for and seen, and one that comes after waits for
                // these events and removes them with the rest of the history. Never an event of a deleted account.
                try await db.raw(
                    """
                    INSERT INTO account_events (\(unsafeRaw: Self.eventColumns))
                    SELECT \(unsafeRaw: HistoryEvent.signedOutIDSQL("s.id")), s.account_id, 'signed_out', 'expired', s.id, NULL, s.expires_at
                    FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.id IN (\(binds: ids))
                    \(unsafeRaw: database.flavor == .postgres ? "FOR KEY SHARE OF a" : "")
                    ON CONFLICT (id) DO NOTHING
                    """
                ).run()
            }
            // A full batch stops at its last expiry; otherwise everything up to the cutoff is done.
            let until = expired.count == limit ? try expired.last?.date("expires_at")?.milliseconds ?? cutoff.milliseconds : cutoff.milliseconds
            try await db.raw(
                """
                INSERT INTO orchard_settings (name, value) VALUES (\(bind: Self.expiriesRecordedUntil), \(bind: String(until)))
                ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
                """
            ).run()
            return expired.count
        }
    }

    /// The targets with at least one row past its cutoff, each found by one probe of its expiry index.
    public func retentionTargetsDue(cutoffs: [RetentionTarget: Date]) async throws -> [RetentionTarget] {
        var due: [RetentionTarget] = []
        for target in RetentionTarget.allCases {
            guard let cutoff = cutoffs[target] else { continue }
            if target == .sessionExpiries {
                let pending = try await database.read(
                    """
                    SELECT token_hash AS key FROM sessions
                    WHERE expires_at > \(Self.expiriesRecordedUntil(at: cutoff)) AND expires_at <= \(bind: cutoff.milliseconds)
                        AND ended_at IS NULL
                    LIMIT 1
                    """
                )
                if !pending.isEmpty { due.append(target) }
                continue
            }
            let table = Self.table(target)
            let rows = try await database.read(
                """
                SELECT \(unsafeRaw: table.key) AS key FROM \(unsafeRaw: table.name)
                WHERE \(unsafeRaw: table.expired) \(bind: cutoff.milliseconds) LIMIT 1
                """
            )
            if !rows.isEmpty { due.append(target) }
        }
        return due
    }

    /// Removes up to `limit` rows of the target older than `cutoff`, in one statement.
    public func purge(_ target: RetentionTarget, before cutoff: Date, limit: Int) async throws -> Int {
        if target == .sessionExpiries { return try await recordExpiries(before: cutoff, limit: limit) }
        let table = Self.table(target)
        return try await database.transaction { db in
            try await db.raw(
                """
                DELETE FROM \(unsafeRaw: table.name) WHERE \(unsafeRaw: table.key) IN (
                    SELECT \(unsafeRaw: table.key) FROM \(unsafeRaw: table.name)
                    WHERE \(unsafeRaw: table.expired) \(bind: cutoff.milliseconds) LIMIT \(bind: limit)
                )
                RETURNING \(unsafeRaw: table.key) AS key
                """
            ).all().count
        }
    }
}
