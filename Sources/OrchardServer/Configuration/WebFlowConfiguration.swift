public import Foundation

/// Sign in with Apple on the web, and where users reach this server (`APPLE_REDIRECT_URI`, `ORCHARD_PUBLIC_URL`,
/// `APPLE_WEB_CLIENT_ID`).
public struct WebFlowConfiguration: Sendable {
    /// `APPLE_REDIRECT_URI`: the web flow's redirect URI as registered with Apple; none turns the web flow off.
    public var redirectURI: URL?
    /// `ORCHARD_PUBLIC_URL`: where users reach this server (behind a proxy: the proxy's URL).
    public var publicURL: URL?
    /// `APPLE_WEB_CLIENT_ID`: the Services ID the web flow authorizes with.
    public var clientID: String?

    /// The web flow off.
    public init() {}

    /// Reads the web flow's settings.
    /// - Throws: ``ConfigurationError`` for a URL that is not one.
    public init(reader settings: SettingsReader) throws(ConfigurationError) {
        redirectURI = try settings.url("APPLE_REDIRECT_URI")
        publicURL = try settings.url("ORCHARD_PUBLIC_URL")
        clientID = settings.text("APPLE_WEB_CLIENT_ID")
    }

    /// The origin the site is served from (for CSRF checks and cookies): `ORCHARD_PUBLIC_URL`'s, else the redirect URI's.
    public var siteOrigin: String? {
        guard let url = publicURL ?? redirectURI, let scheme = url.scheme, let host = url.host else { return nil }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }
}
