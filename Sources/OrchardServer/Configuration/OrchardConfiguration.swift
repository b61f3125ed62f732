public import Accounts
import AppleID
import Foundation
public import Logging
import Storage

/// Every setting of the contract's "Configuration" table, validated: one component per part of Orchard, each read by
/// its own `init(reader:)`, composed here.
public struct OrchardConfiguration: Sendable {
    /// Which groups of settings a command needs; the others may be absent.
    public struct Needs: OptionSet, Sendable {
        /// The raw bits.
        public let rawValue: Int
        /// Creates a set.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `APPLE_TEAM_ID`, `APPLE_KEY_ID`, `APPLE_PRIVATE_KEY_FILE`, `APPLE_CLIENT_IDS` (or `apple.teams`).
        public static let apple = Needs(rawValue: 1 << 0)
        /// `ORCHARD_VAULT_KEYS`.
        public static let vault = Needs(rawValue: 1 << 1)
        /// Everything `serve` needs.
        public static let all: Needs = [.apple, .vault]
    }

    /// Where `serve` listens and what it allows anonymous clients.
    public var listener = ListenerConfiguration()
    /// The database.
    public var database = DatabaseConfiguration()
    /// `ORCHARD_VAULT_KEYS`: the first encrypts, all decrypt.
    public var vaultKeys: [VaultKey] = []
    /// Apple's side: teams, keys, client ids, base URL.
    public var apple = AppleConfiguration()
    /// The web flow and the site's origin.
    public var webFlow = WebFlowConfiguration()
    /// The webhooks to the app's other backends.
    public var webhooks = WebhookConfiguration()
    /// The lifecycle's settings (sessions, nonces, validation, the consent-revoked policy, the clock's leeway).
    public var lifecycle = AccountsConfiguration()
    /// Access tokens for the app's other backends.
    public var accessTokens = AccessTokenConfiguration(issuer: "http://127.0.0.1:8080")
    /// `ORCHARD_LOG_LEVEL`.
    public var logLevel = Logger.Level.info

    /// The contract's defaults.
    public init() {}

    /// The web flow's client id: `APPLE_WEB_CLIENT_ID`, else the first client id (of the first team).
    public var webClientID: String? { webFlow.clientID ?? apple.allClientIDs.first }

    /// The origin the site is served from (for CSRF checks and cookies).
    public var siteOrigin: String? { webFlow.siteOrigin }

    /// The lifecycle's settings, with the webhook URLs it writes rows for.
    public var accounts: AccountsConfiguration {
        var accounts = lifecycle
        accounts.webhookURLs = webhooks.urls.map(\.absoluteString)
        accounts.accessTokens = accessTokens
        return accounts
    }
}
