import Accounts
import AppleID
public import Configuration
public import Foundation
import Logging
import NIOSSL
import Storage

extension OrchardConfiguration {
    /// Where a setting's effective value came from.
    public enum Source: String, Sendable {
        /// The process's environment.
        case environment
        /// The file `ORCHARD_CONFIG_FILE` names.
        case file
        /// Nobody set it: the contract's default.
        case `default`
    }

    /// Every setting `serve` reads, by its environment name, with its effective value (secrets as `<redacted>`),
    /// in the order of the contract's table.
    public var effectiveSettings: [(name: String, value: String)] {
        func seconds(_ duration: Duration) -> String { String(duration.components.seconds) }
        func list(_ values: [String]) -> String { values.isEmpty ? "(none)" : values.joined(separator: ",") }
        let databaseURL: String =
            switch database.url {
            case .sqlite(let path): "sqlite:\(path)"
            case .postgres(let url): Self.redactingPassword(url)
            }
        // With apple.teams, one line per team after the single-team settings (then all "(none)").
        let teamLines: [(name: String, value: String)] = apple.teams.enumerated().map { index, team in
            (
                "apple.teams[\(index)]",
                "team_id=\(team.teamID) key_id=\(team.keyID) private_key_file=<redacted> client_ids=\(list(team.clientIDs))"
            )
        }
        return [
            ("ORCHARD_HOST", listener.host),
            ("ORCHARD_PORT", String(listener.port)),
            ("ORCHARD_DATABASE_URL", databaseURL),
            ("ORCHARD_DATABASE_POOL_SIZE", String(database.poolSize)),
            ("ORCHARD_DATABASE_CA_FILE", database.caFile ?? "(system roots)"),
            ("ORCHARD_SESSION_CACHE", database.sessionCache ? "on" : "off"),
            ("ORCHARD_DATABASE_POOLER", database.pooler.rawValue),
            ("ORCHARD_DATABASE_LISTEN_URL", database.listenURL.map(Self.redactingPassword) ?? "(ORCHARD_DATABASE_URL)"),
            ("ORCHARD_VAULT_KEYS", vaultKeys.isEmpty ? "(none)" : "<redacted> (key ids: \(vaultKeys.map(\.id).joined(separator: ",")))"),
            ("APPLE_TEAM_ID", apple.teamID.isEmpty ? "(none)" : apple.teamID),
            ("APPLE_KEY_ID", apple.keyID.isEmpty ? "(none)" : apple.keyID),
            ("APPLE_PRIVATE_KEY_FILE", apple.privateKeyPEM.isEmpty ? "(none)" : "<redacted>"),
            ("APPLE_CLIENT_IDS", list(apple.clientIDs)),
        ] + teamLines + [
            ("APPLE_BASE_URL", apple.baseURL.absoluteString),
            ("APPLE_REDIRECT_URI", webFlow.redirectURI?.absoluteString ?? "(none: web flow off)"),
            (
                "ORCHARD_PUBLIC_URL",
                webFlow.publicURL?.absoluteString ?? siteOrigin.map { "(\($0), from APPLE_REDIRECT_URI)" } ?? "(none)"
            ),
            ("APPLE_WEB_CLIENT_ID", webFlow.clientID ?? webClientID.map { "(\($0), the first client id)" } ?? "(none)"),
            ("ORCHARD_WEBHOOK_URLS", list(webhooks.urls.map { URLRedaction.redactingCredentials($0.absoluteString) })),
            ("ORCHARD_WEBHOOK_SECRET", webhooks.secret == nil ? "(none)" : "<redacted>"),
            ("ORCHARD_WEBHOOK_RETRY_WINDOW", String(Int(lifecycle.webhookRetryWindow.seconds))),
            ("ORCHARD_CONSENT_REVOKED_POLICY", lifecycle.consentRevokedPolicy.rawValue),
            ("ORCHARD_REFRESH_VALIDATION_INTERVAL", seconds(lifecycle.refreshValidationInterval)),
            ("ORCHARD_SESSION_TTL", seconds(lifecycle.sessionTTL)),
            ("ORCHARD_NONCE_LIFETIME", seconds(lifecycle.nonceLifetime)),
            ("ORCHARD_CLOCK_LEEWAY", seconds(lifecycle.clockLeeway)),
            ("ORCHARD_HISTORY_RETENTION", "\(Int(lifecycle.retention.history.seconds / 86_400)) days"),
            ("ORCHARD_SHUTDOWN_GRACE", seconds(listener.shutdownGrace)),
            ("ORCHARD_RATE_LIMIT_PER_MINUTE", listener.rateLimitPerMinute == 0 ? "0 (off)" : String(listener.rateLimitPerMinute)),
            ("ORCHARD_TRUSTED_PROXIES", list(listener.trustedProxies.map(\.description))),
            ("ORCHARD_TLS_CERT_FILE", listener.tlsCertificateFile ?? "(none: plain HTTP)"),
            ("ORCHARD_TLS_KEY_FILE", listener.tlsKeyFile ?? "(none)"),
            ("ORCHARD_METRICS_HOST", listener.metricsHost),
            ("ORCHARD_METRICS_PORT", listener.metricsPort.map(String.init) ?? "(none: /metrics on the public listener)"),
            ("ORCHARD_ADMIN_HOST", listener.adminHost),
            ("ORCHARD_ADMIN_PORT", listener.adminPort.map(String.init) ?? "(none: no operator API or console)"),
            ("ORCHARD_LOG_LEVEL", logLevel.rawValue),
            ("ORCHARD_TOKEN_ISSUER", accessTokens.issuer),
            ("ORCHARD_TOKEN_AUDIENCE", accessTokens.audiences.isEmpty ? "(\(accessTokens.issuer), the issuer)" : list(accessTokens.audiences)),
            ("ORCHARD_ACCESS_TOKEN_TTL", seconds(accessTokens.ttl)),
            ("ORCHARD_TOKEN_KEY_LIFETIME", seconds(accessTokens.keyLifetime)),
        ]
    }

    /// Where `name` was set: the environment wins over the file, as when loading.
    public static func source(
        of name: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        file: ConfigReader?
    ) -> Source {
        if name.hasPrefix("apple.teams") { return .file }
        if let value = environment[name], !value.trimmingCharacters(in: .whitespaces).isEmpty { return .environment }
        if file?.settingText(name) != nil { return .file }
        return .default
    }

    /// The checks `serve` makes after loading, at once: the Apple key is a usable P-256 key, and the TLS files (if any)
    /// are a certificate chain and its key.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting at fault.
    public func checkFiles() throws(ConfigurationError) {
        for (index, team) in apple.teams.enumerated() where !team.privateKeyPEM.isEmpty {
            do {
                _ = try ClientSecretSigner(teams: [team], clock: SystemWallClock())
            } catch {
                throw ConfigurationError(setting: "apple.teams[\(index)].private_key_file", problem: "is not a usable P-256 private key (.p8)")
            }
        }
        if apple.teams.isEmpty, !apple.privateKeyPEM.isEmpty {
            do {
                _ = try ClientSecretSigner(teamID: apple.teamID, keyID: apple.keyID, privateKeyPEM: apple.privateKeyPEM, clock: SystemWallClock())
            } catch {
                throw ConfigurationError(setting: "APPLE_PRIVATE_KEY_FILE", problem: "is not a usable P-256 private key (.p8)")
            }
        }
        _ = try ServerTLS.serverBuilder(self)
    }

    /// A PostgreSQL URL with its password replaced by `<redacted>`.
    static func redactingPassword(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "redacted"
        return (components.string ?? url).replacingOccurrences(of: ":redacted@", with: ":<redacted>@")
    }
}
