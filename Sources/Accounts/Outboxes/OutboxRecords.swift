public import AppleID
public import Foundation

/// A token waiting in the revocation outbox: sealed, with its retry state.
public struct RevocationJob: Sendable, Equatable {
    /// The row's id (also the sealing context).
    public var id: String
    /// The client id the token was issued to.
    public var clientID: String
    /// The token, sealed under the context `revocation:ID:token`.
    public var sealedToken: String
    /// `refresh_token` or `access_token`.
    public var hint: TokenTypeHint
    /// Tries so far.
    public var attempts: Int
    /// When it may be tried next.
    public var nextAttemptAt: Date
    /// Until when the current holder owns it.
    public var leaseUntil: Date?
    /// The last failure, without any secret.
    public var lastError: String?
    /// When the account was deleted.
    public var createdAt: Date
    /// The deleted account's id (for operators; the account itself is gone).
    public var accountID: String?

    /// Creates a job.
    public init(
        id: String,
        clientID: String,
        sealedToken: String,
        hint: TokenTypeHint,
        attempts: Int,
        nextAttemptAt: Date,
        leaseUntil: Date?,
        lastError: String?,
        createdAt: Date,
        accountID: String? = nil
    ) {
        self.accountID = accountID
        self.id = id
        self.clientID = clientID
        self.sealedToken = sealedToken
        self.hint = hint
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.leaseUntil = leaseUntil
        self.lastError = lastError
        self.createdAt = createdAt
    }
}

/// The audit record of a deletion: a salted hash of the subject, the event and the time; nothing else.
public struct AuditRecord: Sendable, Equatable {
    /// The row's id.
    public var id: String
    /// SHA-256 of the installation's salt and the subject, lowercase hex.
    public var subjectDigest: String
    /// What happened (`account.deleted`).
    public var event: String
    /// Why (`user_request`, `operator`, `consent_revoked`, `apple_account_deleted`).
    public var reason: String?
    /// When.
    public var occurredAt: Date
}

/// One webhook to one URL in the durable outbox.
public struct WebhookDelivery: Sendable, Equatable {
    /// The row's id.
    public var id: String
    /// The event's id (`webhook-id`), shared by every URL's row of one event.
    public var eventID: String
    /// The event's type (`account.deleted`, …).
    public var eventType: String
    /// Where it goes.
    public var url: String
    /// The JSON body, fixed when the event happened (it holds no personal data).
    public var body: String
    /// Tries so far.
    public var attempts: Int
    /// When it was written.
    public var createdAt: Date

    /// Creates a delivery.
    public init(id: String, eventID: String, eventType: String, url: String, body: String, attempts: Int, createdAt: Date) {
        self.id = id
        self.eventID = eventID
        self.eventType = eventType
        self.url = url
        self.body = body
        self.attempts = attempts
        self.createdAt = createdAt
    }
}

/// A webhook row as operators see it.
public struct WebhookDeliveryStatus: Sendable, Equatable {
    /// The delivery.
    public var delivery: WebhookDelivery
    /// `pending`, `delivered` or `failed`.
    public var status: String
    /// The last failure.
    public var lastError: String?
    /// When it is tried next (pending only).
    public var nextAttemptAt: Date?

    /// Creates a status.
    public init(delivery: WebhookDelivery, status: String, lastError: String?, nextAttemptAt: Date?) {
        self.delivery = delivery
        self.status = status
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
    }
}
