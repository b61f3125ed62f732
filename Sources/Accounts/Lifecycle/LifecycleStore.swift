import AppleID
public import Foundation

/// The durable rows behind deletion, notifications and webhooks: each claimed with a lease, each step idempotent.
public protocol LifecycleStore: Sendable {
    /// The installation's salt for the audit hash of subjects (made at the first migration).
    func auditSalt() async throws -> String
    /// Applies a change in one transaction; `false` (and nothing written) when the account no longer exists.
    func apply(_ change: AccountChange) async throws -> Bool

    /// Claims up to `limit` revocations due at `now` that nobody holds, leasing them until `leaseUntil`.
    func claimRevocations(now: Date, leaseUntil: Date, limit: Int) async throws -> [RevocationJob]
    /// Removes a revocation Apple accepted.
    func completeRevocation(id: String) async throws
    /// Releases a revocation for a later try.
    func rescheduleRevocation(id: String, attempts: Int, nextAttemptAt: Date, lastError: String) async throws
    /// Revocations not yet accepted, oldest first.
    func pendingRevocations(limit: Int) async throws -> [RevocationJob]

    /// Stores a verified notification; `false` when its `jti` was stored before.
    func insertNotification(_ entry: InboxEntry, nextAttemptAt: Date) async throws -> Bool
    /// Claims up to `limit` unprocessed notifications due at `now`.
    func claimNotifications(now: Date, leaseUntil: Date, limit: Int) async throws -> [InboxEntry]
    /// Marks a notification processed without any account change (unknown subject or type); drops its sealed event.
    func completeNotification(jti: String, outcome: String, at: Date) async throws
    /// Releases a notification for a later try.
    func rescheduleNotification(jti: String, attempts: Int, nextAttemptAt: Date) async throws
    /// The inbox record of a notification, if any.
    func notification(jti: String) async throws -> InboxEntry?

    /// Claims up to `limit` pending webhook deliveries due at `now`.
    func claimWebhooks(now: Date, leaseUntil: Date, limit: Int) async throws -> [WebhookDelivery]
    /// Marks a delivery done.
    func markWebhookDelivered(id: String, at: Date) async throws
    /// Releases a delivery for a later try.
    func rescheduleWebhook(id: String, attempts: Int, nextAttemptAt: Date, lastError: String) async throws
    /// Gives a delivery up after its retry window; it stays visible to operators.
    func markWebhookFailed(id: String, attempts: Int, lastError: String) async throws
    /// Deliveries in a state (`pending`, `delivered`, `failed`), oldest first.
    func webhooks(status: String, limit: Int) async throws -> [WebhookDeliveryStatus]

    /// Claims up to `limit` accounts whose refresh token is due for validation at `now` (held, credential valid),
    /// moving their due time to `leaseUntil` so no other validator takes them meanwhile.
    func claimDueValidations(now: Date, leaseUntil: Date, limit: Int) async throws -> [AccountRecord]
    /// Records a successful validation: `last_validated_at`, the new access token, the next due time.
    func recordValidation(accountID: String, at: Date, sealedAccessToken: String?, nextValidationAt: Date) async throws
    /// Sets when an account is next due (`nil`: not until the next sign-in).
    func scheduleValidation(accountID: String, at: Date?) async throws
    /// Whether the account has a session that has neither ended nor expired at `now`.
    func hasLiveSession(accountID: String, now: Date) async throws -> Bool
    /// How many accounts are due at `now`, and the oldest due time among them.
    func validationBacklog(now: Date) async throws -> (count: Int, oldestDue: Date?)
}
