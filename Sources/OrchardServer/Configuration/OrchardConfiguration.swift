public import Accounts
public import AppleID
public import Foundation
public import Logging
public import Storage

/// Every setting of the contract's "Configuration" table, validated.
public struct OrchardConfiguration: Sendable {
    /// Which groups of settings a command needs; the others may be absent.
    public struct Needs: OptionSet, Sendable {
        /// The raw bits.
        public let rawValue: Int
        /// Creates a set.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `APPLE_TEAM_ID`, `APPLE_KEY_ID`, `APPLE_PRIVATE_KEY_FILE`, `APPLE_CLIENT_IDS`.
        public static let apple = Needs(rawValue: 1 << 0)
        /// `ORCHARD_VAULT_KEYS`.
        public static let vault = Needs(rawValue: 1 << 1)
        /// What `serve` and `accounts delete` need.
        public static let all: Needs = [.apple, .vault]
    }

    /// Apple's own REST base URL.
    public static let appleProductionBaseURL = URL(string: "https://appleid.apple.com")!

    /// Where the HTTP server listens.
    public var host = "127.0.0.1"
    /// Where the HTTP server listens.
    public var port = 8080
    /// The database.
    public var database: DatabaseURL = .sqlite(path: "orchard.sqlite")
    /// Connections per replica (PostgreSQL).
    public var databasePoolSize = 10
    /// CA certificates for TLS to PostgreSQL.
    public var databaseCAFile: String?
    /// The vault keys; empty when the command does not need them.
    public var vaultKeys: [VaultKey] = []
    /// The developer team.
    public var appleTeamID = ""
    /// The Sign in with Apple key's id.
    public var appleKeyID = ""
    /// The `.p8` contents (PKCS#8 PEM).
    public var applePrivateKeyPEM = ""
    /// The App IDs / Services IDs an identity token's `aud` may be.
    public var appleClientIDs: [String] = []
    /// `apple.teams` of the configuration file: several developer teams, each with its key and client ids. Empty when
    /// the single-team settings (the four above) are used.
    public var appleTeams: [AppleTeam] = []
    /// The web flow's redirect URI.
    public var appleRedirectURI: URL?
    /// Where users reach this server.
    public var publicURL: URL?
    /// The Services ID of the web flow.
    public var appleWebClientID: String?
    /// Where Apple's REST endpoints are reached.
    public var appleBaseURL = OrchardConfiguration.appleProductionBaseURL
    /// The app backends told about lifecycle events.
    public var webhookURLs: [URL] = []
    /// The secret that signs webhooks.
    public var webhookSecret: String?
    /// What a `consent-revoked` notification does.
    public var consentRevokedPolicy = ConsentRevokedPolicy.signOut
    /// Seconds between validations of one user's refresh token.
    public var refreshValidationInterval: Duration = .seconds(86_400)
    /// How long a session lives at most.
    public var sessionTTL: Duration = .seconds(2_592_000)
    /// `ORCHARD_NONCE_LIFETIME`: how long an issued nonce, and a web-flow state, stays usable.
    public var nonceLifetime: Duration = .seconds(600)
    /// `ORCHARD_TLS_CERT_FILE`: the PEM certificate chain; with ``tlsKeyFile``, `serve` speaks only HTTPS.
    public var tlsCertificateFile: String?
    /// `ORCHARD_TLS_KEY_FILE`: the PEM private key of ``tlsCertificateFile``.
    public var tlsKeyFile: String?
    /// `ORCHARD_METRICS_HOST`: where the metrics listener listens.
    public var metricsHost = "127.0.0.1"
    /// `ORCHARD_METRICS_PORT`: with it, `/metrics` is served on this second listener only.
    public var metricsPort: Int?
    /// `ORCHARD_SHUTDOWN_GRACE`: how long `serve`, on SIGTERM/SIGINT, lets claimed jobs and open requests finish.
    public var shutdownGrace: Duration = .seconds(10)
    /// `ORCHARD_RATE_LIMIT_PER_MINUTE`: requests per minute per client address to the anonymous routes; 0 is off.
    public var rateLimitPerMinute = 120
    /// `ORCHARD_TRUSTED_PROXIES`: the proxies whose `X-Forwarded-For` is believed.
    public var trustedProxies: [IPAddressRange] = []
    /// Clock skew allowed on `exp` and `iat`.
    public var clockLeeway: Duration = .seconds(60)
    /// How long a deletion waits for Apple to accept its revocation before answering `pending`: 5 seconds (no setting
    /// reads it; a test on a loaded machine lengthens it so that a slow Apple still answers within the wait).
    public var revocationWait: Duration = .seconds(5)
    /// The deadline of one webhook attempt, the whole exchange: 10 seconds, as the contract fixes it (no setting reads
    /// it; tests shorten it so that a stalled receiver's attempt ends quickly).
    public var webhookDeadline: Duration = .seconds(10)
    /// The swift-log level.
    public var logLevel = Logger.Level.info

    /// Creates the defaults.
    public init() {}

    /// Whether Apple's REST endpoints are Apple's own.
    public var isAppleProduction: Bool {
        appleBaseURL.host?.lowercased() == "appleid.apple.com" && appleBaseURL.scheme == "https"
    }

    /// The developer teams: `apple.teams`, or the one team of the single-team settings (none when those are absent,
    /// as for commands that do not call Apple).
    public var teams: [AppleTeam] {
        if !appleTeams.isEmpty { return appleTeams }
        guard !appleTeamID.isEmpty else { return [] }
        return [AppleTeam(teamID: appleTeamID, keyID: appleKeyID, privateKeyPEM: applePrivateKeyPEM, clientIDs: appleClientIDs)]
    }

    /// Every configured client id, of every team, in order: the audiences identity tokens and notifications may have.
    public var clientIDs: [String] { appleTeams.isEmpty ? appleClientIDs : appleTeams.flatMap(\.clientIDs) }

    /// The web flow's client id: `APPLE_WEB_CLIENT_ID`, else the first client id (of the first team).
    public var webClientID: String? { appleWebClientID ?? clientIDs.first }

    /// The origin the site is served from (for CSRF checks and cookies).
    public var siteOrigin: String? {
        guard let url = publicURL ?? appleRedirectURI, let scheme = url.scheme, let host = url.host else { return nil }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }

    /// The lifecycle's settings.
    public var accounts: AccountsConfiguration {
        AccountsConfiguration(
            sessionTTL: sessionTTL,
            nonceLifetime: nonceLifetime,
            refreshValidationInterval: refreshValidationInterval,
            webhookURLs: webhookURLs.map(\.absoluteString),
            consentRevokedPolicy: consentRevokedPolicy,
            revocationWait: revocationWait,
            clockLeeway: clockLeeway
        )
    }
}
