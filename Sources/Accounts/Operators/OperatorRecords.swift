public import Foundation

/// An operator: a person who may use the operator API and console. Only a hash of its token is stored.
public struct OperatorRecord: Sendable, Equatable {
    /// The operator's name, as given to `orchard operators add`.
    public var name: String
    /// When it was added.
    public var createdAt: Date

    /// Creates a record.
    public init(name: String, createdAt: Date) {
        self.name = name
        self.createdAt = createdAt
    }
}

/// One operator request, as the audit log keeps it: who, what (the route's template, never its values), which account,
/// the answer. Nothing personal: no email, subject, query or token.
public struct AuditEntry: Sendable, Equatable {
    /// The entry's id (`aud_…`), also its place among entries of the same millisecond.
    public var id: String
    /// When the request was answered.
    public var at: Date
    /// The operator's name.
    public var operatorName: String
    /// The HTTP method.
    public var method: String
    /// The route as its template (`/admin/v1/accounts/{id}`).
    public var route: String
    /// The account the request concerned, if any.
    public var accountID: String?
    /// The status answered.
    public var status: Int

    /// Creates an entry.
    public init(id: String, at: Date, operatorName: String, method: String, route: String, accountID: String?, status: Int) {
        self.id = id
        self.at = at
        self.operatorName = operatorName
        self.method = method
        self.route = route
        self.accountID = accountID
        self.status = status
    }
}

/// Which of the deletions whose revocation at Apple is not done.
public enum RevocationQueueState: String, Sendable, CaseIterable {
    /// Queued, not tried yet.
    case pending
    /// Tried and not accepted yet (Apple down or refusing, or the token's vault key missing); still retried.
    case failed
    /// No token was held: the user must revoke on Apple's page.
    case manualRequired = "manual_required"
}

/// A deletion whose revocation at Apple is not done. The account is gone, so nothing personal is left.
public struct QueuedRevocation: Sendable, Equatable {
    /// The revocation's id (`rev_…`), for a retry; `nil` for one left to the user (`manual_required`), which has none.
    public var id: String?
    /// The deleted account's id (absent for a revocation queued before the operators' migration).
    public var accountID: String?
    /// When the account was deleted.
    public var deletedAt: Date
    /// Where it stands.
    public var state: RevocationQueueState
    /// Tries so far.
    public var attempts: Int
    /// When it is tried next (`pending` and `failed`).
    public var nextAttemptAt: Date?
    /// The last failure, without any secret.
    public var lastError: String?

    /// Creates a row.
    public init(
        id: String? = nil,
        accountID: String?,
        deletedAt: Date,
        state: RevocationQueueState,
        attempts: Int,
        nextAttemptAt: Date?,
        lastError: String?
    ) {
        self.id = id
        self.accountID = accountID
        self.deletedAt = deletedAt
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
    }
}

/// A webhook delivery given up after its retry window.
public struct FailedWebhook: Sendable, Equatable {
    /// The delivery's id (`whd_…`).
    public var id: String
    /// The event's id: the receiver's `webhook-id`.
    public var eventID: String
    /// The event type.
    public var type: String
    /// The account the event is about.
    public var accountID: String?
    /// The receiver's URL, credentials redacted.
    public var url: String
    /// Attempts made.
    public var attempts: Int
    /// The receiver's last HTTP status, when it answered.
    public var lastStatus: Int?
    /// When it was given up.
    public var failedAt: Date?

    /// Creates a row.
    public init(id: String, eventID: String, type: String, accountID: String?, url: String, attempts: Int, lastStatus: Int?, failedAt: Date?) {
        self.id = id
        self.eventID = eventID
        self.type = type
        self.accountID = accountID
        self.url = url
        self.attempts = attempts
        self.lastStatus = lastStatus
        self.failedAt = failedAt
    }
}

/// A notification as the inbox holds it, for operators: never a subject or an email.
public struct ReceivedNotification: Sendable, Equatable {
    /// Where its processing stands, in the contract's words.
    public enum Outcome: String, Sendable, CaseIterable {
        case pending
        case processed
        case unknownSubject = "unknown_subject"
        case predatesGrant = "predates_grant"
        case failed
    }

    /// Apple's `jti`.
    public var id: String
    /// When it arrived.
    public var receivedAt: Date
    /// The client id it was for (Apple's `aud`); absent for a notification stored before the operators' migration.
    public var clientID: String?
    /// The event type as Apple wrote it.
    public var type: String
    /// Where its processing stands.
    public var outcome: Outcome
    /// The account it acted on, when known.
    public var accountID: String?
    /// How many times Apple sent it again.
    public var duplicates: Int

    /// Creates a row.
    public init(id: String, receivedAt: Date, clientID: String?, type: String, outcome: Outcome, accountID: String?, duplicates: Int) {
        self.id = id
        self.receivedAt = receivedAt
        self.clientID = clientID
        self.type = type
        self.outcome = outcome
        self.accountID = accountID
        self.duplicates = duplicates
    }

    /// The contract's outcome for an inbox row's stored outcome (`nil`: not processed yet).
    public static func outcome(stored: String?, processed: Bool) -> Outcome {
        guard processed, let stored else { return .pending }
        switch InboxOutcome.Kind(rawValue: stored) {
        case .unknownSubject: return .unknownSubject
        case .predatesGrant, .predatesAccount: return .predatesGrant
        case .failed: return .failed
        case .processed, .unknownType, .noEvent, .accountDeleted, nil: return .processed
        }
    }
}

/// Whether Apple's notifications reach this server, for one client id.
public struct DeliveryCounts: Sendable, Equatable {
    /// The client id.
    public var clientID: String
    /// The last notification received for it.
    public var lastReceivedAt: Date?
    /// Distinct notifications received in the last 24 hours.
    public var received24h: Int
    /// Distinct notifications received in the last 7 days.
    public var received7d: Int
    /// Repeats of those (Apple sent one again).
    public var duplicates7d: Int
    /// Those about a subject with no account here.
    public var unknownSubject7d: Int
    /// Accounts the daily validation found revoked (`invalid_grant`) that no notification had announced.
    public var revokedWithoutNotification7d: Int

    /// Creates counts of zero.
    public init(clientID: String) {
        self.clientID = clientID
        received24h = 0
        received7d = 0
        duplicates7d = 0
        unknownSubject7d = 0
        revokedWithoutNotification7d = 0
    }
}

/// A page of newest-first records and the cursor to the next (older) page.
public struct OperatorPage<Item: Sendable>: Sendable {
    /// The records, newest first.
    public var items: [Item]
    /// The cursor for the next page (the last record's id), when there may be one.
    public var next: String?

    /// Creates a page.
    public init(items: [Item], next: String?) {
        self.items = items
        self.next = next
    }
}
