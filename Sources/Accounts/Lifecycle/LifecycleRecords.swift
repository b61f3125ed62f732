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
    /// The client id it was for (Apple's `aud`), which operators count deliveries by.
    public var clientID: String?

    /// Creates an entry.
    public init(
        jti: String,
        receivedAt: Date,
        eventType: String,
        subjectDigest: String,
        sealedEvent: String?,
        attempts: Int,
        clientID: String? = nil
    ) {
        self.clientID = clientID
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
        /// with a plan, the token the deletion itself removed (refresh token, else access token) moves into the
        /// revocation outbox, so that a sign-in that stored a newer token a moment before has that one revoked.
        case delete(audit: AuditRecord, revocation: RevocationPlan?)
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
    /// The account's history events the change records (none for a deletion, which removes the history).
    public var history: [HistoryEvent] = []
    /// The notification this change processes, marked processed in the same transaction.
    public var completesNotification: String?
    /// What the account must still be when the change commits; `nil`: any state.
    public var condition: ChangeCondition?
    /// When.
    public var at: Date
}

/// What an account must still be when a change decided on an earlier read commits, checked in the change's own
/// statement, so that the change never acts on a newer state than the one it was decided on.
public enum ChangeCondition: Sendable, Equatable {
    /// Its latest grant (the last code exchange, else its creation) is no later than this instant: a notification
    /// about an earlier grant never ends a newer one.
    case grantedNoLaterThan(Date)
    /// It still holds this sealed refresh token (`nil`: none): a validation's verdict is about the token it validated.
    case refreshToken(String?)
}

/// What became of an ``AccountChange``.
public enum AccountChangeOutcome: Sendable, Equatable {
    /// Committed, with the revocation a deletion put into the outbox (none when it removed no token, or was planned
    /// without one).
    case applied(revocation: RevocationJob?)
    /// No such account: nothing written.
    case gone
    /// The account no longer meets the change's ``ChangeCondition``: nothing written.
    case superseded
}

/// The tokens a deletion removed with the account row, as stored (sealed under the account's contexts).
public struct RemovedTokens: Sendable {
    /// The account's id.
    public var accountID: String
    /// The client id the tokens were issued to.
    public var clientID: String
    /// The refresh token, sealed.
    public var sealedRefreshToken: String?
    /// The access token, sealed.
    public var sealedAccessToken: String?

    /// Creates the record.
    public init(accountID: String, clientID: String, sealedRefreshToken: String?, sealedAccessToken: String?) {
        self.accountID = accountID
        self.clientID = clientID
        self.sealedRefreshToken = sealedRefreshToken
        self.sealedAccessToken = sealedAccessToken
    }
}

/// How a deletion's revocation row is made from the tokens the deletion removed, inside its transaction.
public struct RevocationPlan: Sendable {
    /// The row's id (also its sealing context).
    public var id: String
    /// The lease the deleting request holds on the row while it waits for Apple.
    public var leaseUntil: Date
    /// When the deletion happened.
    public var createdAt: Date
    /// Re-seals the token to revoke (the refresh token, else the access token) under the row's context; `nil` when the
    /// deletion removed neither.
    public var reseal: @Sendable (RemovedTokens) throws -> (sealedToken: String, hint: TokenTypeHint)?

    /// The outbox row for `removed`, or `nil` when there is no token to revoke.
    public func job(for removed: RemovedTokens) throws -> RevocationJob? {
        guard let (sealedToken, hint) = try reseal(removed) else { return nil }
        return RevocationJob(
            id: id,
            clientID: removed.clientID,
            sealedToken: sealedToken,
            hint: hint,
            attempts: 0,
            nextAttemptAt: leaseUntil,
            leaseUntil: leaseUntil,
            lastError: nil,
            createdAt: createdAt,
            accountID: removed.accountID
        )
    }
}

/// What a sign-in writes, in one transaction: the account created or updated, its new session and history events, and
/// what a transfer it completes leaves behind.
public struct SignInRecord: Sendable {
    /// The account as the sign-in leaves it.
    public var account: AccountRecord
    /// Whether the account is created (else updated).
    public var isNew: Bool
    /// The new session.
    public var session: SessionRecord
    /// The history events the sign-in records.
    public var history: [HistoryEvent] = []
    /// The grant Apple gave this sign-in, put into the revocation outbox instead of anything else when the account to
    /// update was deleted meanwhile.
    public var revocationIfGone: RevocationJob?
    /// The account's pending import, marked `exchanged` with its webhooks queued when it is still pending (a sign-in
    /// whose identity token carried the transfer identifier).
    public var completesTransfer: TransferCompletion?
}

/// What a finished refresh validation records.
public enum ValidationResult: Sendable, Equatable {
    /// Apple accepted the refresh token: `last_validated_at`, the new access token (sealed) when Apple sent one, and the
    /// next due time.
    case validated(at: Date, sealedAccessToken: String?, nextValidationAt: Date)
    /// Not due again until the next sign-in (nobody signed in, no refresh token held, or the grant is gone).
    case unscheduled
    /// A sign-in stored another refresh token while this one was validated: the verdict is about a token no longer
    /// held, so nothing is recorded (the sign-in set the schedule of its own).
    case superseded
}
