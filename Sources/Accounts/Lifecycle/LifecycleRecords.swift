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
        createdAt: Date
    ) {
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

    /// Creates a record.
    public init(id: String, subjectDigest: String, event: String, reason: String?, occurredAt: Date) {
        self.id = id
        self.subjectDigest = subjectDigest
        self.event = event
        self.reason = reason
        self.occurredAt = occurredAt
    }
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

/// A notification in the inbox, as stored when it arrived.
public struct InboxEntry: Sendable, Equatable {
    /// Apple's `jti`: the key that keeps duplicates out.
    public var jti: String
    /// When it arrived.
    public var receivedAt: Date
    /// The event type as Apple wrote it.
    public var eventType: String
    /// The salted hash of the subject (kept after processing).
    public var subjectDigest: String
    /// The event (subject, email, …) sealed under `notification:JTI:event`, until processed.
    public var sealedEvent: String?
    /// Tries so far.
    public var attempts: Int

    /// Creates an entry.
    public init(jti: String, receivedAt: Date, eventType: String, subjectDigest: String, sealedEvent: String?, attempts: Int) {
        self.jti = jti
        self.receivedAt = receivedAt
        self.eventType = eventType
        self.subjectDigest = subjectDigest
        self.sealedEvent = sealedEvent
        self.attempts = attempts
    }
}

/// One atomic change to an account, with everything it leaves behind, written in one transaction.
public struct AccountChange: Sendable {
    /// What happens to the account.
    public enum Action: Sendable {
        /// The account and its personal data go; its sessions end (`account_deleted`); the audit record is written;
        /// the token, if any, moves into the revocation outbox (already leased by the caller when `leaseUntil` is set).
        case delete(audit: AuditRecord, revocation: RevocationJob?)
        /// Apple's email forwarding changed.
        case setEmailForwarding(EmailForwarding)
        /// Apple's grant is gone: sessions end (`apple_credential_revoked`) and the credential is `revoked`.
        case revokeCredential
    }

    /// The account.
    public var accountID: String
    /// The change.
    public var action: Action
    /// Webhooks the change sends.
    public var webhooks: [WebhookDelivery]
    /// The notification this change processes, marked processed in the same transaction.
    public var completesNotification: String?
    /// When.
    public var at: Date

    /// Creates a change.
    public init(accountID: String, action: Action, webhooks: [WebhookDelivery], completesNotification: String?, at: Date) {
        self.accountID = accountID
        self.action = action
        self.webhooks = webhooks
        self.completesNotification = completesNotification
        self.at = at
    }
}

/// What a finished refresh validation records.
public enum ValidationResult: Sendable, Equatable {
    /// Apple accepted the refresh token: `last_validated_at`, the new access token (sealed) when Apple sent one, and the
    /// next due time.
    case validated(at: Date, sealedAccessToken: String?, nextValidationAt: Date)
    /// Not due again until the next sign-in (nobody signed in, no refresh token held, or the grant is gone).
    case unscheduled
}
