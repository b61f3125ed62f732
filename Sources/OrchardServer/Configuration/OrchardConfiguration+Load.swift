import Accounts
import AppleID
public import Configuration
public import Foundation
import Logging
import Storage

extension OrchardConfiguration {
    /// The configuration reader: environment variables first, then the file `ORCHARD_CONFIG_FILE` names (JSON, or YAML
    /// by its `.yaml`/`.yml` extension), whose keys are the same names.
    public static func makeReader(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(ConfigurationError)
        -> ConfigReader
    {
        let secrets = SecretsSpecifier<String, String>.specific(ConfigurationFile.secretKeys)
        var providers: [any ConfigProvider] = [
            EnvironmentVariablesProvider(environmentVariables: environment, secretsSpecifier: secrets)
        ]
        if let file = environment["ORCHARD_CONFIG_FILE"], !file.isEmpty {
            guard FileManager.default.fileExists(atPath: file) else {
                throw ConfigurationError(setting: "ORCHARD_CONFIG_FILE", problem: "no file at \(file)")
            }
            providers.append(try await fileProvider(file))
        }
        return ConfigReader(providers: providers)
    }

    /// The provider of the file `ORCHARD_CONFIG_FILE` names: YAML by its `.yaml`/`.yml` extension, else JSON.
    static func fileProvider(_ file: String) async throws(ConfigurationError) -> any ConfigProvider {
        try ConfigurationFile.provider(file)
    }

    /// Only the file `ORCHARD_CONFIG_FILE` names (`nil` when it is not set), to tell which settings came from it.
    public static func makeFileReader(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(ConfigurationError) -> ConfigReader? {
        guard let file = environment["ORCHARD_CONFIG_FILE"], !file.isEmpty else { return nil }
        return ConfigReader(provider: try await fileProvider(file))
    }

    /// Reads and validates every setting; the groups in `needs` must be present.
    ///
    /// - Throws: ``ConfigurationError`` naming the first setting that is wrong.
    public static func load(from reader: ConfigReader, needs: Needs) throws(ConfigurationError) -> OrchardConfiguration {
        var config = OrchardConfiguration()
        let settings = Settings(reader: reader)

        config.host = settings.text("ORCHARD_HOST") ?? config.host
        if let port = settings.text("ORCHARD_PORT") {
            guard let value = Int(port), (0...65_535).contains(value) else {
                throw ConfigurationError(setting: "ORCHARD_PORT", problem: "must be a port number (0-65535)")
            }
            config.port = value
        }
        if let url = settings.text("ORCHARD_DATABASE_URL", secret: true) {
            do {
                config.database = try DatabaseURL(parsing: url)
            } catch {
                throw ConfigurationError(setting: "ORCHARD_DATABASE_URL", problem: error.reason)
            }
        }
        config.tlsCertificateFile = settings.text("ORCHARD_TLS_CERT_FILE")
        config.tlsKeyFile = settings.text("ORCHARD_TLS_KEY_FILE")
        switch (config.tlsCertificateFile, config.tlsKeyFile) {
        case (nil, nil), (.some, .some): break
        case (.some, nil): throw ConfigurationError(setting: "ORCHARD_TLS_KEY_FILE", problem: "is required when ORCHARD_TLS_CERT_FILE is set")
        case (nil, .some): throw ConfigurationError(setting: "ORCHARD_TLS_CERT_FILE", problem: "is required when ORCHARD_TLS_KEY_FILE is set")
        }
        config.metricsHost = settings.text("ORCHARD_METRICS_HOST") ?? config.metricsHost
        if let port = settings.text("ORCHARD_METRICS_PORT") {
            guard let value = Int(port), (0...65_535).contains(value) else {
                throw ConfigurationError(setting: "ORCHARD_METRICS_PORT", problem: "must be a port number (0-65535)")
            }
            config.metricsPort = value
        }
        config.databasePoolSize = try settings.integer("ORCHARD_DATABASE_POOL_SIZE", in: 1...1000) ?? config.databasePoolSize
        config.databaseCAFile = settings.text("ORCHARD_DATABASE_CA_FILE")
        config.logLevel = try settings.logLevel() ?? config.logLevel
        config.sessionTTL = try settings.seconds("ORCHARD_SESSION_TTL", in: 60...31_536_000) ?? config.sessionTTL
        config.clockLeeway = try settings.seconds("ORCHARD_CLOCK_LEEWAY", in: 0...3600) ?? config.clockLeeway
        config.nonceLifetime = try settings.seconds("ORCHARD_NONCE_LIFETIME", in: 1...86_400) ?? config.nonceLifetime
        config.shutdownGrace = try settings.seconds("ORCHARD_SHUTDOWN_GRACE", in: 0...3600) ?? config.shutdownGrace
        config.rateLimitPerMinute = try settings.integer("ORCHARD_RATE_LIMIT_PER_MINUTE", in: 0...1_000_000) ?? config.rateLimitPerMinute
        config.trustedProxies = try (settings.text("ORCHARD_TRUSTED_PROXIES") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            .map { text throws(ConfigurationError) in
                guard let range = IPAddressRange(text) else {
                    throw ConfigurationError(
                        setting: "ORCHARD_TRUSTED_PROXIES",
                        problem: "'\(text)' is not an IP address or CIDR range (e.g. 10.0.0.0/8, ::1)"
                    )
                }
                return range
            }
        config.refreshValidationInterval =
            try settings.seconds("ORCHARD_REFRESH_VALIDATION_INTERVAL", in: 1...31_536_000) ?? config.refreshValidationInterval

        if let base = settings.text("APPLE_BASE_URL") {
            config.appleBaseURL = try settings.url("APPLE_BASE_URL", base)
            try Self.checkTransport(config.appleBaseURL)
        }
        if !config.isAppleProduction, config.refreshValidationInterval < .seconds(86_400) {
            // allowed: only against an emulator or a stand-in
        } else if config.refreshValidationInterval < .seconds(86_400) {
            throw ConfigurationError(
                setting: "ORCHARD_REFRESH_VALIDATION_INTERVAL",
                problem: "must be at least 86400 against Apple's own endpoints (Apple throttles faster callers)"
            )
        }

        if config.isAppleProduction, config.nonceLifetime < .seconds(60) {
            throw ConfigurationError(
                setting: "ORCHARD_NONCE_LIFETIME",
                problem: "must be at least 60 against Apple's own endpoints (a user needs the time to sign in)"
            )
        }

        config.appleTeamID = settings.text("APPLE_TEAM_ID") ?? ""
        config.appleKeyID = settings.text("APPLE_KEY_ID") ?? ""
        config.appleClientIDs = (settings.text("APPLE_CLIENT_IDS") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        config.appleTeams = try settings.teams(readKeys: needs.contains(.apple))
        if !config.appleTeams.isEmpty {
            let shorthand = ["APPLE_TEAM_ID", "APPLE_KEY_ID", "APPLE_PRIVATE_KEY_FILE", "APPLE_CLIENT_IDS"].filter { settings.text($0) != nil }
            guard shorthand.isEmpty else {
                throw ConfigurationError(
                    setting: "apple.teams",
                    problem: "give either apple.teams or the single-team settings, not both (\(shorthand.joined(separator: ", ")) is set too)"
                )
            }
        } else if needs.contains(.apple) {
            guard !config.appleTeamID.isEmpty else { throw ConfigurationError(setting: "APPLE_TEAM_ID", problem: "is required") }
            guard OrchardConfiguration.isTeamID(config.appleTeamID) else {
                throw ConfigurationError(setting: "APPLE_TEAM_ID", problem: "must be the 10-character team id")
            }
            guard !config.appleKeyID.isEmpty else { throw ConfigurationError(setting: "APPLE_KEY_ID", problem: "is required") }
            guard let keyFile = settings.text("APPLE_PRIVATE_KEY_FILE") else {
                throw ConfigurationError(setting: "APPLE_PRIVATE_KEY_FILE", problem: "is required")
            }
            config.applePrivateKeyPEM = try Settings.readKeyFile(keyFile, setting: "APPLE_PRIVATE_KEY_FILE")
            guard !config.appleClientIDs.isEmpty else {
                throw ConfigurationError(setting: "APPLE_CLIENT_IDS", problem: "is required (comma-separated App IDs / Services IDs)")
            }
        }
        if needs.contains(.vault) {
            guard let keys = settings.text("ORCHARD_VAULT_KEYS", secret: true) else {
                throw ConfigurationError(setting: "ORCHARD_VAULT_KEYS", problem: "is required (ID:BASE64_OF_32_BYTES, comma-separated)")
            }
            do {
                config.vaultKeys = try VaultKey.parseList(keys)
            } catch {
                throw ConfigurationError(setting: "ORCHARD_VAULT_KEYS", problem: error.reason)
            }
        }

        if let redirect = settings.text("APPLE_REDIRECT_URI") {
            config.appleRedirectURI = try settings.url("APPLE_REDIRECT_URI", redirect)
        }
        if let publicURL = settings.text("ORCHARD_PUBLIC_URL") {
            config.publicURL = try settings.url("ORCHARD_PUBLIC_URL", publicURL)
        }
        config.appleWebClientID = settings.text("APPLE_WEB_CLIENT_ID")
        config.webhookURLs = try (settings.text("ORCHARD_WEBHOOK_URLS") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            .map { text throws(ConfigurationError) in try settings.url("ORCHARD_WEBHOOK_URLS", text) }
        config.webhookSecret = settings.text("ORCHARD_WEBHOOK_SECRET", secret: true)
        if !config.webhookURLs.isEmpty, config.webhookSecret == nil {
            throw ConfigurationError(setting: "ORCHARD_WEBHOOK_SECRET", problem: "is required when ORCHARD_WEBHOOK_URLS is set")
        }
        if let policy = settings.text("ORCHARD_CONSENT_REVOKED_POLICY") {
            guard let value = ConsentRevokedPolicy(rawValue: policy) else {
                throw ConfigurationError(setting: "ORCHARD_CONSENT_REVOKED_POLICY", problem: "must be sign-out or delete")
            }
            config.consentRevokedPolicy = value
        }
        return config
    }

    /// Refuses plain `http` to anything but a loopback address: tokens and client secrets travel there.
    static func checkTransport(_ url: URL) throws(ConfigurationError) {
        guard url.scheme == "http" else { return }
        let host = (url.host ?? "").lowercased()
        // An IP literal of the loopback range, or `localhost`: `http://127.evil.example` is a name like any other.
        let loopbackRanges = ["127.0.0.0/8", "::1"].compactMap { IPAddressRange($0) }
        let loopback = host == "localhost" || IPAddress(host).map { address in loopbackRanges.contains { $0.contains(address) } } == true
        guard loopback else {
            throw ConfigurationError(setting: "APPLE_BASE_URL", problem: "plain http is allowed only to a loopback address; use https")
        }
    }
}

/// Typed reads of the contract's settings, each failure naming its setting.
extension OrchardConfiguration {
    /// Whether `text` has a team id's shape: 10 ASCII letters and digits.
    public static func isTeamID(_ text: String) -> Bool {
        text.count == 10 && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }
}

private struct Settings {
    let reader: ConfigReader

    func text(_ key: String, secret: Bool = false) -> String? {
        reader.settingText(key, secret: secret)
    }

    func integer(_ key: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        guard let text = text(key) else { return nil }
        guard let value = Int(text) ?? Double(text).flatMap({ $0.rounded() == $0 ? Int($0) : nil }), range.contains(value) else {
            throw ConfigurationError(setting: key, problem: "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    func seconds(_ key: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Duration? {
        try integer(key, in: range).map { .seconds($0) }
    }

    func url(_ key: String, _ text: String) throws(ConfigurationError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host?.isEmpty == false
        else {
            throw ConfigurationError(setting: key, problem: "must be an absolute http(s) URL")
        }
        return url
    }

    /// The teams of `apple.teams` (empty when the file has none), checked: each has a 10-character `team_id`, a
    /// `key_id`, a `private_key_file` (read and checked to be a `.p8` when `readKeys`) and `client_ids`, and no client
    /// id is listed twice.
    func teams(readKeys: Bool) throws(ConfigurationError) -> [AppleTeam] {
        var teams: [AppleTeam] = []
        var owners: [String: String] = [:]
        for index in 0... {
            let prefix = "apple.teams[\(index)]"
            func value(_ name: String) -> String? { reader.settingText(["apple", "teams", String(index), name]) }
            let clientIDs = reader.settingList(["apple", "teams", String(index), "client_ids"])
            guard value("team_id") != nil || value("key_id") != nil || value("private_key_file") != nil || clientIDs != nil else { break }
            guard let teamID = value("team_id"), OrchardConfiguration.isTeamID(teamID) else {
                throw ConfigurationError(setting: "\(prefix).team_id", problem: "must be the 10-character team id")
            }
            guard let keyID = value("key_id") else { throw ConfigurationError(setting: "\(prefix).key_id", problem: "is required") }
            guard let keyFile = value("private_key_file") else {
                throw ConfigurationError(setting: "\(prefix).private_key_file", problem: "is required")
            }
            guard let clientIDs, !clientIDs.isEmpty else {
                throw ConfigurationError(setting: "\(prefix).client_ids", problem: "is required (a list of App IDs / Services IDs)")
            }
            for clientID in clientIDs {
                if let other = owners[clientID] {
                    throw ConfigurationError(
                        setting: "\(prefix).client_ids",
                        problem: "\(clientID) is listed by team \(other) too; a client id belongs to exactly one team"
                    )
                }
                owners[clientID] = teamID
            }
            var pem = ""
            if readKeys {
                pem = try Self.readKeyFile(keyFile, setting: "\(prefix).private_key_file")
            }
            teams.append(AppleTeam(teamID: teamID, keyID: keyID, privateKeyPEM: pem, clientIDs: clientIDs))
        }
        return teams
    }

    /// Reads a `.p8` key file.
    /// - Throws: ``ConfigurationError`` for `setting` when it cannot be read or is not a PKCS#8 PEM key.
    static func readKeyFile(_ keyFile: String, setting: String) throws(ConfigurationError) -> String {
        guard let pem = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
            throw ConfigurationError(setting: setting, problem: "cannot read \(keyFile)")
        }
        guard pem.contains("-----BEGIN PRIVATE KEY-----") else {
            throw ConfigurationError(setting: setting, problem: "\(keyFile) is not a PKCS#8 PEM (.p8) key")
        }
        return pem
    }

    func logLevel() throws(ConfigurationError) -> Logger.Level? {
        guard let text = text("ORCHARD_LOG_LEVEL") else { return nil }
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw ConfigurationError(
                setting: "ORCHARD_LOG_LEVEL",
                problem: "must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        return level
    }
}

extension ConfigReader {
    /// A setting as text, whether the provider holds it as a string, a number or a boolean; trimmed, `nil` when empty.
    func settingText(_ key: String, secret: Bool = false) -> String? {
        settingText([key], secret: secret)
    }

    /// A list setting: an array in the file, or comma-separated text; `nil` when absent.
    func settingList(_ components: [String]) -> [String]? {
        let key = ConfigKey(components)
        let values = stringArray(forKey: key) ?? settingText(components)?.split(separator: ",").map(String.init)
        return values?.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// A nested setting (`apple.teams.0.team_id`) as text; trimmed, `nil` when empty.
    func settingText(_ components: [String], secret: Bool = false) -> String? {
        let configKey = ConfigKey(components)
        let value =
            string(forKey: configKey, isSecret: secret)
            ?? int(forKey: configKey, isSecret: secret).map(String.init)
            ?? double(forKey: configKey, isSecret: secret).map { String($0) }
            ?? bool(forKey: configKey, isSecret: secret).map { String($0) }
        guard let value else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : trimmed
    }
}
