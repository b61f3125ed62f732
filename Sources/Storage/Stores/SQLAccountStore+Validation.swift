public import Accounts
public import Foundation
import SQLKit

extension SQLAccountStore: ValidationSchedule {
    /// Claims accounts due for validation through the `next_validation_at` index; only due rows are touched.
    public func claimDueValidations(now: Date, leaseUntil: Date, limit: Int) async throws -> [AccountRecord] {
        try await claim(.validations, now: now, leaseUntil: leaseUntil, limit: limit, returning: Self.accountColumns, as: Self.account(from:))
    }

    /// Records a batch: validated accounts get `last_validated_at`, the new access token (when Apple sent one) and
    /// their next due time; unscheduled and given-up ones are not due until their next sign-in; retries are due again
    /// at their time.
    public func completeValidations(_ results: [JobResult<AccountRecord, ValidationResult>], at now: Date) async throws {
        var unscheduled: [String] = []
        var validated: [(id: String, at: Int64, sealedAccessToken: String?, next: Int64)] = []
        var retries: [(id: String, next: Int64)] = []
        for result in results {
            switch result.outcome {
            case .done(.validated(let at, let sealedAccessToken, let next)):
                validated.append((result.job.id, at.milliseconds, sealedAccessToken, next.milliseconds))
            case .done(.unscheduled), .failed:
                unscheduled.append(result.job.id)
            case .retry(let next, _):
                retries.append((result.job.id, next.milliseconds))
            }
        }
        try await database.transaction { [unscheduled, validated, retries] db in
            if !unscheduled.isEmpty {
                try await db.raw("UPDATE accounts SET next_validation_at = NULL WHERE id IN (\(binds: unscheduled))").run()
            }
            for account in validated {
                try await db.raw(
                    """
                    UPDATE accounts SET last_validated_at = \(bind: account.at),
                        sealed_access_token = COALESCE(\(bind: account.sealedAccessToken), sealed_access_token),
                        next_validation_at = \(bind: account.next), updated_at = \(bind: account.at)
                    WHERE id = \(bind: account.id)
                    """
                ).run()
            }
            for retry in retries {
                try await db.raw("UPDATE accounts SET next_validation_at = \(bind: retry.next) WHERE id = \(bind: retry.id)").run()
            }
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
