import Accounts
import AppleID
import Foundation
public import HTTPTypes

/// The web flow's binder cookie, `__Host-orchard_web_state`: a fresh random value set by `GET /v1/auth/apple/authorize`,
/// without which the callback refuses the flow's state (`state_invalid`). It ties the state to the browser that
/// started the flow, so that a page cannot replay an attacker's own unsent form post from a victim's browser (login
/// CSRF).
///
/// Apple's post back is cross-site, so the cookie is `SameSite=None` (and therefore `Secure`). The `__Host-` prefix makes
/// browsers accept it only from this host, with `Path=/` and no `Domain`, so that no sibling subdomain can plant one;
/// it lives as long as the state.
public enum WebStateCookie {
    /// The cookie's name, as the contract fixes it.
    public static let name = "__Host-orchard_web_state"
    /// `Set-Cookie` for a new flow's binder.
    public static func setCookie(binder: String, lifetime: Duration) -> String {
        "\(name)=\(binder); Path=/; Max-Age=\(Int(lifetime.seconds)); HttpOnly; Secure; SameSite=None"
    }

    /// `Set-Cookie` that removes the binder: every answer of the callback carries it.
    public static let expiredCookie = "\(name)=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=None"

    /// The binder the request carries, if any.
    public static func binder(in headers: HTTPFields) -> String? {
        for field in headers[values: .cookie] {
            for pair in field.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " }
                guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == name else { continue }
                let value = String(trimmed[trimmed.index(after: equals)...])
                if !value.isEmpty { return value }
            }
        }
        return nil
    }
}
