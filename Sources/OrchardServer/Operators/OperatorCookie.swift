public import Foundation

/// The console's login cookie, `__Host-orchard_admin`: `HttpOnly; Secure; SameSite=Strict; Path=/`, 12 hours.
public enum OperatorCookie {
    /// The cookie's name, as the contract fixes it.
    public static let name = "__Host-orchard_admin"

    /// `Set-Cookie` for a new login.
    public static func setCookie(login: String, expiresAt: Date, now: Date) -> String {
        let maxAge = max(0, Int(expiresAt.timeIntervalSince(now).rounded()))
        return "\(name)=\(login); Path=/; Max-Age=\(maxAge); HttpOnly; Secure; SameSite=Strict"
    }

    /// `Set-Cookie` that expires the login cookie at once.
    public static let expiredCookie = "\(name)=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict"
}
