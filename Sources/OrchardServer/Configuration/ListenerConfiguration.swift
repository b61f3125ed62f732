/// Where and how `serve` listens: its address, built-in TLS, the metrics listener, the shutdown grace, and what it
/// allows anonymous clients (`ORCHARD_HOST`, `ORCHARD_PORT`, `ORCHARD_TLS_*`, `ORCHARD_METRICS_*`, `ORCHARD_ADMIN_*`,
/// `ORCHARD_SHUTDOWN_GRACE`, `ORCHARD_RATE_LIMIT_PER_MINUTE`, `ORCHARD_TRUSTED_PROXIES`).
public struct ListenerConfiguration: Sendable {
    /// `ORCHARD_HOST`.
    public var host = "127.0.0.1"
    /// `ORCHARD_PORT`.
    public var port = 8080
    /// `ORCHARD_TLS_CERT_FILE`: with the key, `serve` speaks only HTTPS.
    public var tlsCertificateFile: String?
    /// `ORCHARD_TLS_KEY_FILE`.
    public var tlsKeyFile: String?
    /// `ORCHARD_METRICS_HOST`.
    public var metricsHost = "127.0.0.1"
    /// `ORCHARD_METRICS_PORT`: when set, `/metrics` is served there only.
    public var metricsPort: Int?
    /// `ORCHARD_ADMIN_HOST`.
    public var adminHost = "127.0.0.1"
    /// `ORCHARD_ADMIN_PORT`: when set, the operator API and console are served there only (it may be the metrics
    /// listener's port); when not, they are not served at all.
    public var adminPort: Int?
    /// `ORCHARD_SHUTDOWN_GRACE`: how long open requests and claimed jobs may finish after SIGTERM.
    public var shutdownGrace: Duration = .seconds(10)
    /// `ORCHARD_RATE_LIMIT_PER_MINUTE` per client on the anonymous routes; 0 turns the limit off.
    public var rateLimitPerMinute = 120
    /// `ORCHARD_TRUSTED_PROXIES`: only these peers' `X-Forwarded-For` is believed.
    public var trustedProxies: [IPAddressRange] = []

    /// The defaults.
    public init() {}

    /// Reads the listener's settings.
    /// - Throws: ``ConfigurationError`` naming the first setting that is wrong.
    public init(reader settings: SettingsReader) throws(ConfigurationError) {
        host = settings.text("ORCHARD_HOST") ?? host
        port = try settings.port("ORCHARD_PORT") ?? port
        tlsCertificateFile = settings.text("ORCHARD_TLS_CERT_FILE")
        tlsKeyFile = settings.text("ORCHARD_TLS_KEY_FILE")
        switch (tlsCertificateFile, tlsKeyFile) {
        case (nil, nil), (.some, .some): break
        case (.some, nil): throw ConfigurationError(setting: "ORCHARD_TLS_KEY_FILE", problem: "is required when ORCHARD_TLS_CERT_FILE is set")
        case (nil, .some): throw ConfigurationError(setting: "ORCHARD_TLS_CERT_FILE", problem: "is required when ORCHARD_TLS_KEY_FILE is set")
        }
        metricsHost = settings.text("ORCHARD_METRICS_HOST") ?? metricsHost
        metricsPort = try settings.port("ORCHARD_METRICS_PORT")
        adminHost = settings.text("ORCHARD_ADMIN_HOST") ?? adminHost
        adminPort = try settings.port("ORCHARD_ADMIN_PORT")
        if let adminPort, adminPort == metricsPort, adminHost != metricsHost {
            throw ConfigurationError(setting: "ORCHARD_ADMIN_HOST", problem: "must be ORCHARD_METRICS_HOST when both listeners share a port")
        }
        shutdownGrace = try settings.seconds("ORCHARD_SHUTDOWN_GRACE", in: 0...3600) ?? shutdownGrace
        rateLimitPerMinute = try settings.integer("ORCHARD_RATE_LIMIT_PER_MINUTE", in: 0...1_000_000) ?? rateLimitPerMinute
        trustedProxies = try settings.list("ORCHARD_TRUSTED_PROXIES").map { text throws(ConfigurationError) in
            guard let range = IPAddressRange(text) else {
                throw ConfigurationError(
                    setting: "ORCHARD_TRUSTED_PROXIES",
                    problem: "'\(text)' is not an IP address or CIDR range (e.g. 10.0.0.0/8, ::1)"
                )
            }
            return range
        }
    }
}
