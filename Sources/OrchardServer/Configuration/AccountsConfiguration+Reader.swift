public import Accounts

extension AccountsConfiguration {
    /// Reads the lifecycle's settings (`ORCHARD_SESSION_TTL`, `ORCHARD_NONCE_LIFETIME`, `ORCHARD_CLOCK_LEEWAY`,
    /// `ORCHARD_REFRESH_VALIDATION_INTERVAL`, `ORCHARD_CONSENT_REVOKED_POLICY`, `ORCHARD_HISTORY_RETENTION`, `ORCHARD_WEBHOOK_RETRY_WINDOW`); against Apple's own endpoints the
    /// validation interval is at least a day and the nonce lifetime at least a minute.
    /// - Throws: ``ConfigurationError`` naming the first setting that is wrong.
    public init(reader settings: SettingsReader, againstApple: Bool) throws(ConfigurationError) {
        self.init()
        sessionTTL = try settings.seconds("ORCHARD_SESSION_TTL", in: 60...31_536_000) ?? sessionTTL
        clockLeeway = try settings.seconds("ORCHARD_CLOCK_LEEWAY", in: 0...3600) ?? clockLeeway
        nonceLifetime = try settings.seconds("ORCHARD_NONCE_LIFETIME", in: 1...86_400) ?? nonceLifetime
        if let days = try settings.integer("ORCHARD_HISTORY_RETENTION", in: 1...36_500) { retention.history = .seconds(days * 86_400) }
        webhookRetryWindow = try settings.seconds("ORCHARD_WEBHOOK_RETRY_WINDOW", in: 0...31_536_000) ?? webhookRetryWindow
        refreshValidationInterval = try settings.seconds("ORCHARD_REFRESH_VALIDATION_INTERVAL", in: 1...31_536_000) ?? refreshValidationInterval
        if againstApple, refreshValidationInterval < .seconds(86_400) {
            throw ConfigurationError(
                setting: "ORCHARD_REFRESH_VALIDATION_INTERVAL",
                problem: "must be at least 86400 against Apple's own endpoints (Apple throttles faster callers)"
            )
        }
        if againstApple, nonceLifetime < .seconds(60) {
            throw ConfigurationError(
                setting: "ORCHARD_NONCE_LIFETIME",
                problem: "must be at least 60 against Apple's own endpoints (a user needs the time to sign in)"
            )
        }
        if let policy = settings.text("ORCHARD_CONSENT_REVOKED_POLICY") {
            guard let value = ConsentRevokedPolicy(rawValue: policy) else {
                throw ConfigurationError(setting: "ORCHARD_CONSENT_REVOKED_POLICY", problem: "must be sign-out or delete")
            }
            consentRevokedPolicy = value
        }
    }
}
