/// The lifecycle's settings, with the contract's defaults.
public struct AccountsConfiguration: Sendable {
    /// How long a session lives after sign-in at most (`ORCHARD_SESSION_TTL`).
    public var sessionTTL: Duration
    /// How long an issued nonce may be used.
    public var nonceLifetime: Duration
    /// Time between validations of one account's refresh token (`ORCHARD_REFRESH_VALIDATION_INTERVAL`).
    public var refreshValidationInterval: Duration

    /// Creates a configuration.
    public init(
        sessionTTL: Duration = .seconds(2_592_000),
        nonceLifetime: Duration = .seconds(600),
        refreshValidationInterval: Duration = .seconds(86_400)
    ) {
        self.sessionTTL = sessionTTL
        self.nonceLifetime = nonceLifetime
        self.refreshValidationInterval = refreshValidationInterval
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    package var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
