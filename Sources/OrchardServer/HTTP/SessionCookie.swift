public import Foundation
public import HTTPTypes

/// The web flow's session cookie, `__Host-orchard_session`, and the headers that make a browser forget it.
public enum SessionCookie {
    /// The cookie's name, as the contract fixes it.
    public static let name = "__Host-orchard_session"

    /// `Clear-Site-Data`.
    public static let clearSiteDataField = HTTPField.Name("Clear-Site-Data")!

    /// What the browser is told to drop: its cookies and its storage for this site.
    public static let clearSiteDataValue = #""cookies", "storage""#

    /// `Set-Cookie` for a new session: `HttpOnly; Secure; SameSite=Lax; Path=/`, living as long as the session.
    ///
    /// - Parameters:
    ///   - token: The session token (base64url: valid cookie characters).
    ///   - expiresAt: When the session ends at the latest.
    ///   - now: The current instant, for `Max-Age`.
    public static func setCookie(token: String, expiresAt: Date, now: Date) -> String {
        let maxAge = max(0, Int(expiresAt.timeIntervalSince(now).rounded()))
        return "\(name)=\(token); Path=/; Max-Age=\(maxAge); HttpOnly; Secure; SameSite=Lax"
    }

    /// `Set-Cookie` that expires the session cookie at once (for browsers that ignore `Clear-Site-Data`).
    public static let expiredCookie = "\(name)=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax"

    /// Adds `Clear-Site-Data: "cookies", "storage"` and an expired session cookie to `headers`.
    public static func addClearing(to headers: inout HTTPFields) {
        headers[clearSiteDataField] = clearSiteDataValue
        headers.append(HTTPField(name: .setCookie, value: expiredCookie))
    }
}
