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
        }
    }

    /// The targets with at least one row past its cutoff, each found by one probe of its expiry index.
    public func retentionTargetsDue(cutoffs: [RetentionTarget: Date]) async throws -> [RetentionTarget] {
        var due: [RetentionTarget] = []
        for target in RetentionTarget.allCases {
            guard let cutoff = cutoffs[target] else { continue }
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
