public import Foundation

/// Accounts' refresh-validation due times, as ``RefreshValidationHandler`` uses them.
public protocol ValidationSchedule: Sendable {
    /// Claims up to `limit` accounts whose refresh token is due for validation at `now` (held, credential valid),
    /// moving their due time to `leaseUntil` so no other validator takes them meanwhile.
    func claimDueValidations(now: Date, leaseUntil: Date, limit: Int) async throws -> [AccountRecord]
    /// Records a batch in one transaction: `done` writes the ``ValidationResult``; `retry` sets the next due time.
    func completeValidations(_ results: [JobResult<AccountRecord, ValidationResult>], at now: Date) async throws
    /// Whether the account has a session that has neither ended nor expired at `now`.
    func hasLiveSession(accountID: String, now: Date) async throws -> Bool
    /// How many accounts are due at `now`, and the oldest due time among them.
    func validationBacklog(now: Date) async throws -> (count: Int, oldestDue: Date?)
}
