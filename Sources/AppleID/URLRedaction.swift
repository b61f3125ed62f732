import Foundation

/// URLs that may carry a secret (a webhook receiver's `https://user:token@host/hook?key=…`) as logs and
/// `orchard config check` show them: the userinfo and the query replaced by `<redacted>`.
public enum URLRedaction {
    /// `url` with its userinfo and its query (each when present) replaced by `<redacted>`; text that is not a URL with
    /// a host is `<redacted>` whole.
    public static func redactingCredentials(_ url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.percentEncodedHost,
            !host.isEmpty
        else { return "<redacted>" }
        var text = scheme + "://"
        if components.percentEncodedUser != nil || components.percentEncodedPassword != nil { text += "<redacted>@" }
        text += host
        if let port = components.port { text += ":\(port)" }
        text += components.percentEncodedPath
        if components.percentEncodedQuery != nil { text += "?<redacted>" }
        if let fragment = components.percentEncodedFragment { text += "#" + fragment }
        return text
    }
}
