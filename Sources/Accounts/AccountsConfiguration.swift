/// The lifecycle's settings, with the contract's defaults.
public struct AccountsConfiguration: Sendable {
    /// How long a session lives after sign-in at most (`ORCHARD_SESSION_TTL`).
    public var sessionTTL: Duration
    /// How long an issued nonce may be used.
    public var nonceLifetime: Duration
    /// Time between validations of one account's refresh token (`ORCHARD_REFRESH_VALIDATION_INTERVAL`).
    public var refreshValidationInterval: Duration
    /// The app backends told about lifecycle events (`ORCHARD_WEBHOOK_URLS`).
    public var webhookURLs: [String]
    /// What a `consent-revoked` notification does (`ORCHARD_CONSENT_REVOKED_POLICY`).
    public var consentRevokedPolicy: ConsentRevokedPolicy
    /// How long a deletion request waits for Apple's `/auth/revoke` before answering `pending`.
    public var revocationWait: Duration
    /// How long webhooks are retried before they are marked failed.
    public var webhookRetryWindow: Duration
    /// When failed jobs are tried again.
    public var retryPolicy: RetryPolicy
    /// Clock skew allowed between Apple and this installation (`ORCHARD_CLOCK_LEEWAY`): a notification whose event
    /// happened earlier than its account's creation by more than this is recorded and not acted on.
    public var clockLeeway: Duration

    /// Creates a configuration.
    public init(
        sessionTTL: Duration = .seconds(2_592_000),
        nonceLifetime: Duration = .seconds(600),
        refreshValidationInterval: Duration = .seconds(86_400),
        webhookURLs: [String] = [],
        consentRevokedPolicy: ConsentRevokedPolicy = .signOut,
        revocationWait: Duration = .seconds(5),
        webhookRetryWindow: Duration = .seconds(3 * 86_400),
        retryPolicy: RetryPolicy = RetryPolicy(),
        clockLeeway: Duration = .seconds(60)
    ) {
        self.sessionTTL = sessionTTL
        self.nonceLifetime = nonceLifetime
        self.refreshValidationInterval = refreshValidationInterval
        self.webhookURLs = webhookURLs
        self.consentRevokedPolicy = consentRevokedPolicy
        self.revocationWait = revocationWait
        self.webhookRetryWindow = webhookRetryWindow
        self.retryPolicy = retryPolicy
        self.clockLeeway = clockLeeway
    }
}

/// What a `consent-revoked` notification does.
public enum ConsentRevokedPolicy: String, Sendable, CaseIterable {
    /// End sessions, mark the Apple credential revoked, keep the data.
    case signOut = "sign-out"
    /// Delete the account, as TN3194 does when the revocation follows a deletion request.
    case delete
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    package var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
