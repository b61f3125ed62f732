import AppleID
public import Foundation

/// The durable rows behind deletion, notifications and webhooks, beyond the job queues: the audit salt, the one account
/// change, and what operators and the notification endpoint read and write.
///
/// It refines the job queues the lifecycle's own handlers claim from, so one store serves ``Accounts`` and its
/// handlers; each handler depends only on its queue.
public protocol LifecycleStore: RevocationOutbox, NotificationInbox, ValidationSchedule, TransferStore {
    /// The installation's salt for the audit hash of subjects (made at the first migration).
    func auditSalt() async throws -> String
    /// Applies a change in one transaction; nothing is written when the account no longer exists or no longer meets
    /// the change's condition.
    func apply(_ change: AccountChange) async throws -> AccountChangeOutcome

    /// Revocations not yet accepted, oldest first.
    func pendingRevocations(limit: Int) async throws -> [RevocationJob]

    /// Stores a verified notification; `false` when its `jti` was stored before.
    func insertNotification(_ entry: InboxEntry, nextAttemptAt: Date) async throws -> Bool
    /// The inbox record of a notification, if any.
    func notification(jti: String) async throws -> InboxEntry?

    /// Deliveries in a state (`pending`, `delivered`, `failed`), oldest first.
    func webhooks(status: String, limit: Int) async throws -> [WebhookDeliveryStatus]
}
