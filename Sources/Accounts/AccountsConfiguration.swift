import AppleID
public import Foundation

/// The lifecycle's settings, with the contract's defaults, in one place.
public struct AccountsConfiguration: Sendable {
    /// How long a session lives after sign-in at most (`ORCHARD_SESSION_TTL`).
    public var sessionTTL: Duration = .seconds(2_592_000)
    /// How long an issued nonce (and a web-flow state) may be used (`ORCHARD_NONCE_LIFETIME`).
    public var nonceLifetime: Duration = .seconds(600)
    /// Time between validations of one account's refresh token (`ORCHARD_REFRESH_VALIDATION_INTERVAL`).
    public var refreshValidationInterval: Duration = .seconds(86_400)
    /// What a `consent-revoked` notification does (`ORCHARD_CONSENT_REVOKED_POLICY`).
    public var consentRevokedPolicy = ConsentRevokedPolicy.signOut
    /// Clock skew allowed between Apple and this installation (`ORCHARD_CLOCK_LEEWAY`): a notification whose event
    /// happened earlier than its account's creation or latest grant by more than this is recorded and not acted on.
    public var clockLeeway: Duration = .seconds(60)
    /// The app backends told about lifecycle events (`ORCHARD_WEBHOOK_URLS`).
    public var webhookURLs: [String] = []
    /// How long webhooks are retried before they are marked failed (the contract's three days).
    public var webhookRetryWindow: Duration = .seconds(3 * 86_400)
    /// When failed jobs are tried again (from 2 s, doubling, at most 10 minutes apart).
    public var retryPolicy = RetryPolicy()
    /// How long the records of finished work are kept.
    public var retention = RetentionWindows()
    /// Access tokens: issuer, audiences, lifetimes (the server sets the issuer from where it is reached).
    public var accessTokens = AccessTokenConfiguration(issuer: "http://127.0.0.1:8080")

    /// The contract's defaults.
    public init() {}
}

/// How long the records of finished work are kept before the retention job removes them (the contract's "Storage
/// stays bounded"); nonces and web-flow states go when their lifetime ends.
public struct RetentionWindows: Sendable {
    /// A processed notification's record (kept against duplicates).
    public var processedNotifications: Duration = .seconds(30 * 86_400)
    /// A delivered webhook row (failed ones stay for operators).
    public var deliveredWebhooks: Duration = .seconds(7 * 86_400)
    /// A session's row after it ended or expired (its `session_revoked` reason is promised until then).
    public var endedSessions: Duration = .seconds(7 * 86_400)
    /// An account's history event (`ORCHARD_HISTORY_RETENTION`, in days).
    public var history: Duration = .seconds(400 * 86_400)
    /// A deletion that left the revocation to the user, shown to operators.
    public var manualRevocations: Duration = .seconds(30 * 86_400)

    /// The contract's windows.
    public init() {}

    /// The time before which a row of `target` is removed, at `now`.
    public func cutoff(_ target: RetentionTarget, at now: Date) -> Date {
        switch target {
        case .nonces, .webFlowStates, .consoleLogins: now
        case .manualRevocations: now.addingTimeInterval(-manualRevocations.seconds)
        case .processedNotifications: now.addingTimeInterval(-processedNotifications.seconds)
        case .deliveredWebhooks: now.addingTimeInterval(-deliveredWebhooks.seconds)
        case .endedSessions, .expiredSessions: now.addingTimeInterval(-endedSessions.seconds)
        case .history: now.addingTimeInterval(-history.seconds)
        case .sessionExpiries: now
        }
    }
}

/// How long the lifecycle's calls out may take: the contract's deadlines, which a test may shorten or lengthen
/// through the composition root's dependencies (they are no user setting).
public struct Deadlines: Sendable {
    /// A deletion request's wait for Apple's `/auth/revoke` before it answers `pending` (the contract's 5 s).
    public var revocationWait: Duration
    /// A background call to Apple (validation, revocation, transfer): the contract's 10 s.
    public var appleCall: Duration
    /// One webhook delivery attempt, status line included: the contract's 10 s.
    public var webhookAttempt: Duration
    /// A fetch of Apple's signing keys.
    public var appleKeyFetch: Duration
    /// The longest Apple's notification endpoint holds a notification back while processing is behind
    /// (``InboxBackpressure``).
    public var notificationHold: Duration

    /// The contract's deadlines, with those given changed.
    public init(
        revocationWait: Duration = .seconds(5),
        appleCall: Duration = .seconds(10),
        webhookAttempt: Duration = .seconds(10),
        appleKeyFetch: Duration = .seconds(10),
        notificationHold: Duration = .seconds(2)
    ) {
        self.revocationWait = revocationWait
        self.appleCall = appleCall
        self.webhookAttempt = webhookAttempt
        self.appleKeyFetch = appleKeyFetch
        self.notificationHold = notificationHold
    }
}

/// What a `consent-revoked` notification does.
public enum ConsentRevokedPolicy: String, Sendable, CaseIterable {
    /// End sessions, mark the Apple credential revoked, keep the data.
    case signOut = "sign-out"
    /// Delete the account, as TN3194 does when the revocation follows a deletion request.
    case delete
}
