public import Accounts
public import Foundation
import SQLKit

extension SQLAccountStore {
    /// Claims accounts due for validation through the `next_validation_at` index; only due rows are touched.
    public func claimDueValidations(now: Date, leaseUntil: Date, limit: Int) async throws -> [AccountRecord] {
        let candidates = dueRows(.validations, now: now, limit: limit)
        return try await database.transaction { db in
            try await db.raw(
                """
                UPDATE accounts SET next_validation_at = \(bind: leaseUntil.milliseconds)
                WHERE id IN (\(candidates))
                RETURNING \(unsafeRaw: Self.accountColumns)
                """
            ).all().map(Self.account(from:))
        }
    }

    /// Records a successful validation.
    public func recordValidation(accountID: String, at: Date, sealedAccessToken: String?, nextValidationAt: Date) async throws {
        try await database.withDatabase { db in
            try await db.raw(
                """
                UPDATE accounts SET last_validated_at = \(bind: at.milliseconds),
                    sealed_access_token = COALESCE(\(bind: sealedAccessToken), sealed_access_token),
                    next_validation_at = \(bind: nextValidationAt.milliseconds), updated_at = \(bind: at.milliseconds)
                WHERE id = \(bind: accountID)
                """
            ).run()
        }
    }

    /// Sets when an account is next due.
    public func scheduleValidation(accountID: String, at: Date?) async throws {
        try await database.withDatabase { db in
            try await db.raw("UPDATE accounts SET next_validation_at = \(bind: at?.milliseconds) WHERE id = \(bind: accountID)").run()
        }
    }

    /// Whether the account has a live session.
    public func hasLiveSession(accountID: String, now: Date) async throws -> Bool {
        try await database.withDatabase { db in
            try await db.raw(
                """
                SELECT token_hash FROM sessions
                WHERE account_id = \(bind: accountID) AND ended_at IS NULL AND expires_at > \(bind: now.milliseconds)
                LIMIT 1
                """
            ).first() != nil
        }
    }

    /// How many accounts are due, and the oldest due time.
    public func validationBacklog(now: Date) async throws -> (count: Int, oldestDue: Date?) {
        try await database.withDatabase { db in
            let row = try await db.raw(
                """
                SELECT COUNT(*) AS n, MIN(next_validation_at) AS oldest FROM accounts
                WHERE next_validation_at <= \(bind: now.milliseconds)
                """
            ).first()
            return (try row?.decode(column: "n", as: Int.self) ?? 0, try row?.date("oldest"))
        }
    }
}
