import AppleID
public import Foundation

/// The app's other backends told about lifecycle events, and the secret that signs the webhooks
/// (`ORCHARD_WEBHOOK_URLS`, `ORCHARD_WEBHOOK_SECRET`).
///
/// It describes itself with the URLs' credentials and the secret redacted.
public struct WebhookConfiguration: Sendable, CustomStringConvertible {
    /// `ORCHARD_WEBHOOK_URLS`.
    public var urls: [URL] = []
    /// `ORCHARD_WEBHOOK_SECRET` (`whsec_` + base64 of the key, or the key's bytes).
    public var secret: String?

    /// None.
    public init() {}

    /// The URLs as logs show them, and whether a secret is set.
    public var description: String {
        "WebhookConfiguration(urls: \(urls.map { URLRedaction.redactingCredentials($0.absoluteString) }), secret: \(secret == nil ? "nil" : "<redacted>"))"
    }

    /// Reads the webhooks' settings.
    /// - Throws: ``ConfigurationError`` for a URL that is not one, or URLs without a secret.
    public init(reader settings: SettingsReader) throws(ConfigurationError) {
        urls = try settings.list("ORCHARD_WEBHOOK_URLS").map { text throws(ConfigurationError) in try settings.url("ORCHARD_WEBHOOK_URLS", text) }
        secret = settings.text("ORCHARD_WEBHOOK_SECRET", secret: true)
        if !urls.isEmpty, secret == nil {
            throw ConfigurationError(setting: "ORCHARD_WEBHOOK_SECRET", problem: "is required when ORCHARD_WEBHOOK_URLS is set")
        }
    }
}
