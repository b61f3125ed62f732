public import Accounts
public import Foundation
import SQLKit

extension SQLAccountStore: ValidationSchedule {
    /// Claims accounts due for validation through the `next_validation_at` index; only due rows are touched.
    public func claimDueValidations(now: Date, leaseUntil: Date, limit: Int) async throws -> [AccountRecord] {
        try await claim(.validations, now: now, leaseUntil: leaseUntil, limit: limit, returning: Self.accountColumns, as: Self.account(from:))
    }

    /// Records a batch and ends its leases: validated accounts get `last_validated_at`, the new access token (when
    /// Apple sent one) and their next due time; unscheduled and given-up ones are not due until their next sign-in;
    /// retries are due again at their time; superseded ones are left as the sign-in that replaced their token left them.
    ///
    /// A validated or unscheduled account is written only while it holds the refresh token that was validated: a
    /// sign-in that stored another one meanwhile set a schedule of its own, which a verdict on the old token must not
    /// undo.
    public func completeValidations(_ results: [JobResult<AccountRecord, ValidationResult>], at now: Date) async throws {
        try await keeper.changing(.accounts(results.map(\.job.id))) { sessions in
            let db = sessions.db
            for result in results {
                let id = result.job.id
                let sameToken = Self.sql(.refreshToken(result.job.sealedRefreshToken))
                switch result.outcome {
                case .done(.validated(let at, let sealedAccessToken, let next)):
                    let updated = try await db.raw(
                        """
                        UPDATE accounts SET last_validated_at = \(bind: at.milliseconds), apple_credential = 'valid',
                            sealed_access_token = COALESCE(\(bind: sealedAccessToken), sealed_access_token),
                            next_validation_at = \(bind: next.milliseconds), updated_at = \(bind: at.milliseconds)
                        WHERE id = \(bind: id)\(sameToken)
                        RETURNING id
                        """
                    ).all()
                    // Only for the account still holding the token validated: never an event for a deleted account.
                    if !updated.isEmpty {
                        try await Self.insertEvents([.validation(accountID: id, reason: "valid", at: at)], on: db)
                    }
                case .done(.unscheduled), .failed:
                    try await db.raw("UPDATE accounts SET next_validation_at = NULL WHERE id = \(bind: id)\(sameToken)").run()
                case .retry(let next, _):
                    try await db.raw("UPDATE accounts SET next_validation_at = \(bind: next.milliseconds) WHERE id = \(bind: id)").run()
                case .done(.superseded):
                    break
                }
            }
            let ids = results.map(\.job.id)
            if !ids.isEmpty {
                try await db.raw("UPDATE accounts SET validation_lease_until = NULL WHERE id IN (\(binds: ids))").run()
            }
        }
    }

    /// Whether the account has a live session.
    public func hasLiveSession(accountID: String, now: Date) async throws -> Bool {
        try await !database.read(
            """
            SELECT token_hash FROM sessions
            WHERE account_id = \(bind: accountID) AND ended_at IS NULL AND expires_at > \(bind: now.milliseconds)
            LIMIT 1
            """
        ).isEmpty
    }

    /// How many accounts are due and not held by a claim, and the oldest due time among them.
    public func validationBacklog(now: Date) async throws -> (count: Int, oldestDue: Date?) {
        let row = try await database.read(
            """
            SELECT COUNT(*) AS n, MIN(next_validation_at) AS oldest FROM accounts
            WHERE next_validation_at <= \(bind: now.milliseconds)
                AND (validation_lease_until IS NULL OR validation_lease_until <= \(bind: now.milliseconds))
            """
        ).first
        return (try row?.decode(column: "n", as: Int.self) ?? 0, try row?.date("oldest"))
    }
}
