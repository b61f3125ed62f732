import Accounts
import Foundation
import HTTPTypes
import Hummingbird

/// `GET /account`: the hosted account page of the web flow, rendered for the session cookie (or bearer) it comes with.
///
/// A session that was ended (`session_revoked`, e.g. by Apple) shows the signed-out state with the reason, and a
/// cookie-authenticated one also gets `Clear-Site-Data` and an expired cookie, as every cookie-authenticated
/// `session_revoked` does.
struct AccountPageController<Context: RequestContext>: Sendable {
    let accounts: AccountDesk
    let webFlowEnabled: Bool
    let appleOrigin: String?
    let random: any RandomSource

    /// Creates the controller.
    ///
    /// - Parameters:
    ///   - webFlowEnabled: Whether `APPLE_REDIRECT_URI` is set.
    ///   - appleBaseURL: Where the "Sign in with Apple" form's redirect leads (allowed by the page's CSP).
    ///   - random: For the CSP nonce.
    init(accounts: AccountDesk, webFlowEnabled: Bool, appleBaseURL: URL, random: any RandomSource) {
        self.accounts = accounts
        self.webFlowEnabled = webFlowEnabled
        self.appleOrigin = CookieSessionMiddleware<Context>.normalizedOrigin(appleBaseURL.absoluteString)
        self.random = random
    }

    /// Adds the route.
    func addRoutes(to routes: OrchardRoutes<Context>) {
        routes.add(.get, "/account", use: show)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let nonce = Data(random.bytes(18)).base64EncodedString()
        var headers = securityHeaders(nonce: nonce)
        var account: AccountView?
        var sessions: [DeviceSession] = []
        var activity: [HistoryEntry] = []
        var notice = request.uri.queryParameters["error"].map { Self.notice(forError: String($0)) }
        if let credential = request.sessionToken {
            do {
                let overview = try await accounts.overview(token: credential.token, activity: 20)
                (account, sessions, activity) = (overview.account, overview.sessions, overview.activity)
                notice = nil
            } catch {
                switch error.code {
                case .sessionRevoked:
                    notice = error.sessionEndReason.map { .sessionEnded($0) }
                    if credential.viaCookie { SessionCookie.addClearing(to: &headers) }
                case .sessionInvalid:
                    if credential.viaCookie { headers.append(HTTPField(name: .setCookie, value: SessionCookie.expiredCookie)) }
                default:
                    throw error
                }
            }
        }
        let page = AccountPage(
            account: account,
            sessions: sessions,
            activity: activity,
            notice: notice,
            webFlowEnabled: webFlowEnabled,
            cspNonce: nonce
        )
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: page.html())))
    }

    /// What `?error=CODE` (set by the callback when Apple reported a failure) says on the page.
    static func notice(forError code: String) -> AccountPage.Notice {
        let clean = WebFlowController<Context>.errorCode(code)
        return clean == "user_cancelled_authorize" ? .signInCancelled : .signInFailed(code: clean)
    }

    /// No caching, no framing, no sniffing, no referrer, and a CSP that allows only this page's own inline style and
    /// script, calls to this site, and the sign-in form's way to Apple.
    private func securityHeaders(nonce: String) -> HTTPFields {
        let formAction = ["'self'", appleOrigin].compactMap { $0 }.joined(separator: " ")
        let policy = [
            "default-src 'none'", "script-src 'nonce-\(nonce)'", "style-src 'nonce-\(nonce)'", "connect-src 'self'", "img-src 'self' data:",
            "form-action \(formAction)", "base-uri 'none'", "frame-ancestors 'none'",
        ]
        return [
            .contentType: "text/html; charset=utf-8",
            .cacheControl: "no-store",
            .contentSecurityPolicy: policy.joined(separator: "; "),
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
            HTTPField.Name("X-Frame-Options")!: "DENY",
        ]
    }
}
