public import Accounts
import Foundation

extension AccessTokenConfiguration {
    /// Reads `ORCHARD_TOKEN_ISSUER` (default: the site's origin, else the listener's URL),
    /// `ORCHARD_TOKEN_AUDIENCE` (default: the issuer), `ORCHARD_ACCESS_TOKEN_TTL` (1–3600 seconds) and
    /// `ORCHARD_TOKEN_KEY_LIFETIME`.
    /// - Throws: ``ConfigurationError`` naming the first setting that is wrong.
    public init(reader settings: SettingsReader, listener: ListenerConfiguration, webFlow: WebFlowConfiguration) throws(ConfigurationError) {
        let issuer = settings.text("ORCHARD_TOKEN_ISSUER") ?? Self.defaultIssuer(listener: listener, webFlow: webFlow)
        for (setting, value) in [("ORCHARD_TOKEN_ISSUER", issuer)] + settings.list("ORCHARD_TOKEN_AUDIENCE").map({ ("ORCHARD_TOKEN_AUDIENCE", $0) })
        where value.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control }) {
            throw ConfigurationError(setting: setting, problem: "must not contain spaces or control characters")
        }
        self.init(
            issuer: issuer,
            audiences: settings.list("ORCHARD_TOKEN_AUDIENCE"),
            ttl: try settings.seconds("ORCHARD_ACCESS_TOKEN_TTL", in: 1...3600) ?? .seconds(300),
            keyLifetime: try settings.seconds("ORCHARD_TOKEN_KEY_LIFETIME", in: 60...315_360_000) ?? .seconds(2_592_000)
        )
    }

    /// The origin of `ORCHARD_PUBLIC_URL` (whose default is the origin of `APPLE_REDIRECT_URI`), else the listener's
    /// `http://HOST:PORT` (`https` with TLS).
    static func defaultIssuer(listener: ListenerConfiguration, webFlow: WebFlowConfiguration) -> String {
        if let origin = webFlow.siteOrigin { return origin }
        let scheme = listener.tlsCertificateFile == nil ? "http" : "https"
        let host = listener.host.contains(":") ? "[\(listener.host)]" : listener.host
        return "\(scheme)://\(host):\(listener.port)"
    }
}
