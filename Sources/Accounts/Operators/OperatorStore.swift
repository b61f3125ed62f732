public import Foundation

/// The operators, their console logins and the audit log, as ``Operators`` uses them.
public protocol OperatorStore: Sendable {
    /// Adds an operator; `false` when the name is taken.
    func insertOperator(name: String, tokenHash: String, at: Date) async throws -> Bool
    /// Every operator, by name.
    func operators() async throws -> [OperatorRecord]
    /// Removes an operator and its console logins in one transaction; `false` when there is none of that name.
    func deleteOperator(name: String) async throws -> Bool
    /// The operator whose token hashes to `tokenHash`.
    func operatorName(tokenHash: String) async throws -> String?
    /// Records a console login until `expiresAt`, and removes those expired at `now`.
    func insertConsoleLogin(tokenHash: String, operatorName: String, expiresAt: Date, now: Date) async throws
    /// The operator of a console login live at `now` whose operator still exists.
    func consoleLogin(tokenHash: String, now: Date) async throws -> String?
    /// Ends a console login.
    func deleteConsoleLogin(tokenHash: String) async throws
    /// Appends an audit entry.
    func appendAudit(_ entry: AuditEntry) async throws
    /// Completes an entry written before its request was acted on: its status and the account it concerned.
    func completeAudit(id: String, status: Int, accountID: String?) async throws
    /// Audit entries older than the entry `before` (newest first); `nil` when `before` is no entry's id.
    func audit(before: String?, limit: Int) async throws -> [AuditEntry]?
}

/// What operators look at and finish, as ``OperatorDesk`` uses it.
public protocol OperatorDeskStore: Sendable {
    /// Accounts whose id is `id`, or whose subject hash or email hash is one of `hashes`: through indexes, never by
    /// opening rows.
    func accounts(id: String, hashes: [String], limit: Int) async throws -> [AccountRecord]
    /// Deletions whose revocation at Apple is not done, in one state, newest first.
    func queuedRevocations(_ state: RevocationQueueState, limit: Int) async throws -> [QueuedRevocation]
    /// Makes a revocation that waits on an operator (`failed`) due at `now`; `false` when no failed revocation has that id.
    func retryRevocation(id: String, at now: Date) async throws -> Bool
    /// Webhook deliveries given up, newest first.
    func failedWebhooks(limit: Int) async throws -> [FailedWebhook]
    /// Makes a failed delivery pending again from `now`, with a fresh schedule; `false` when no failed delivery has that id.
    func retryWebhook(id: String, at now: Date) async throws -> Bool
    /// Notifications older than the one whose `jti` is `before` (newest first); `nil` when `before` is unknown.
    func notifications(before: String?, limit: Int) async throws -> [ReceivedNotification]?
    /// Delivery counts per client id that has received any notification, as of `now`.
    func delivery(now: Date) async throws -> [DeliveryCounts]
}
