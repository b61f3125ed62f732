public import Foundation

/// The notification inbox, as ``NotificationHandler`` uses it.
public protocol NotificationInbox: Sendable {
    /// Stores a verified notification; `false` when its `jti` was stored before.
    func insertNotification(_ entry: InboxEntry, nextAttemptAt: Date) async throws -> Bool
    /// Claims up to `limit` unprocessed notifications due at `now` that nobody holds, leasing them until `leaseUntil`.
    func claimNotifications(now: Date, leaseUntil: Date, limit: Int) async throws -> [InboxEntry]
    /// Records a batch in one transaction: a `done` notification not yet marked processed (by the account change that
    /// acted on it) is marked processed with the outcome it carries (`unknown_subject`, `unknown_type`, ...) and loses its
    /// sealed event; a `retry` is released with one more attempt and its next due time.
    func completeNotifications(_ results: [JobResult<InboxEntry, String>], at now: Date) async throws
}
