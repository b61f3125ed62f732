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

/// How a notification's processing ended: the outcome the inbox records and the account it concerned, when one was
/// found.
public struct InboxOutcome: Sendable, Equatable {
    /// What became of a notification, by the name the inbox stores (its `outcome` column, which operators read).
    public enum Kind: String, Sendable {
        /// Acted on: the account change it asked for committed, or was already so.
        case processed
        /// About no account Orchard holds (never signed in here, or deleted since).
        case unknownSubject = "unknown_subject"
        /// A type Apple may add that Orchard does not know: recorded, not acted on.
        case unknownType = "unknown_type"
        /// Happened before the account existed: about an earlier account of the same Apple ID.
        case predatesAccount = "predates_account"
        /// Happened before the account's latest grant: about a grant the user has renewed since.
        case predatesGrant = "predates_grant"
        /// Its sealed event was gone when it was read (a notification processed meanwhile).
        case noEvent = "no_event"
        /// Given up after its retries.
        case failed
        /// Its account was deleted before it was acted on: its sealed event went with the account's data.
        case accountDeleted = "account_deleted"
    }

    /// What became of it.
    public var kind: Kind
    /// The account the notification was about, when one was found.
    public var accountID: String?

    /// The outcome's name, as the inbox stores it.
    public var name: String { kind.rawValue }

    /// Creates an outcome.
    public init(_ kind: Kind, accountID: String? = nil) {
        self.kind = kind
        self.accountID = accountID
    }
}
