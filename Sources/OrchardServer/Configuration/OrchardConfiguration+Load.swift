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

    /// Reads and validates every setting, component by component; the groups in `needs` must be present.
    ///
    /// - Throws: ``ConfigurationError`` naming the first setting that is wrong.
    public static func load(from reader: ConfigReader, needs: Needs) throws(ConfigurationError) -> OrchardConfiguration {
        let settings = SettingsReader(reader)
        var config = OrchardConfiguration()
        config.listener = try ListenerConfiguration(reader: settings)
        config.database = try DatabaseConfiguration(reader: settings)
        config.logLevel = try settings.logLevel() ?? config.logLevel
        // The lifecycle's bounds depend on whom Orchard talks to: Apple's own endpoints, or a stand-in.
        let baseURL = try settings.url("APPLE_BASE_URL") ?? AppleConfiguration.productionBaseURL
        try AppleConfiguration.checkTransport(baseURL)
        config.lifecycle = try AccountsConfiguration(reader: settings, againstApple: AppleConfiguration.isProduction(baseURL))
        config.apple = try AppleConfiguration(reader: settings, required: needs.contains(.apple))
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
        config.webFlow = try WebFlowConfiguration(reader: settings)
        // Apple's identity token from the web flow names the Services ID as its `aud`: one Orchard does not accept
        // would refuse every web sign-in after the user went through Apple's pages.
        if let webClientID = config.webFlow.clientID, !config.apple.allClientIDs.isEmpty, !config.apple.allClientIDs.contains(webClientID) {
            throw ConfigurationError(
                setting: "APPLE_WEB_CLIENT_ID",
                problem: "must be one of the client ids (APPLE_CLIENT_IDS, or a team's client_ids): the web flow's identity tokens name it"
            )
        }
        config.webhooks = try WebhookConfiguration(reader: settings)
        config.accessTokens = try AccessTokenConfiguration(reader: settings, listener: config.listener, webFlow: config.webFlow)
        return config
    }
}
