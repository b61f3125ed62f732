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
    func completeNotifications(_ results: [JobResult<InboxEntry, InboxOutcome>], at now: Date) async throws
}

/// How a notification's processing ended: the outcome the inbox records (`processed`, `unknown_subject`,
/// `predates_grant`, `unknown_type`, …) and the account it concerned, when one was found.
public struct InboxOutcome: Sendable, Equatable, ExpressibleByStringLiteral {
    /// The outcome's name, as the inbox stores it.
    public var name: String
    /// The account the notification was about, when one was found.
    public var accountID: String?

    /// Creates an outcome.
    public init(_ name: String, accountID: String? = nil) {
        self.name = name
        self.accountID = accountID
    }

    /// An outcome about no account.
    public init(stringLiteral name: String) {
        self.init(name)
    }
}
