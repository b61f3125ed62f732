import Accounts
import Foundation
import HTTPTypes
public import Hummingbird
import Logging

/// The rules for requests authenticated by the `orchard_session` cookie rather than a bearer token.
///
/// - A cookie-authenticated `POST`, `PUT`, `PATCH` or `DELETE` on a session route whose `Origin` is not this site's is
///   refused with `403 csrf_rejected` before it reaches the route (the web-flow callback is no session route: its
///   single-use state authenticates it).
/// - Cookie-authenticated answers to `DELETE /v1/session` and `DELETE /v1/account` (successes, and refusals other
///   than server faults), and every cookie-authenticated `session_revoked`, carry `Clear-Site-Data: "cookies",
///   "storage"` and an expired cookie, so that the browser drops what it holds.
///
/// Bearer-authenticated requests pass untouched: clearing site data for them would sign the user out of sibling sites.
/// The session logic itself stays in ``Accounts/Accounts``.
public struct CookieSessionMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: RouteTable
    let siteOrigin: String?

    /// The routes whose cookie-authenticated answers always clear the site: sign-out and deletion.
    static var endingRoutes: Set<String> { ["DELETE /v1/session", "DELETE /v1/account"] }

    /// Creates the middleware.
    ///
    /// - Parameters:
    ///   - routes: The table that says which routes authenticate with the session.
    ///   - siteOrigin: This site's origin (``OrchardConfiguration/siteOrigin``); with none, any `Origin` is foreign.
    public init(routes: RouteTable, siteOrigin: String?) {
        self.routes = routes
        self.siteOrigin = siteOrigin.flatMap(Self.normalizedOrigin)
    }

    /// Handles one request.
    public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        guard let credential = request.sessionToken, credential.viaCookie else {
            return try await next(request, context)
        }
        let path = request.uri.path
        if Self.isUnsafe(request.method), routes.authenticatesSession(request.method, path), !isSameOrigin(request) {
            context.logger.info("refused a cookie-authenticated request from another origin", metadata: ["http.path": "\(path)"])
            throw OrchardProblem.csrfRejected
        }
        let ends = Self.endingRoutes.contains("\(request.method.rawValue) \(Self.trimmed(path))")
        do {
            var response = try await next(request, context)
            if ends, (200..<500).contains(response.status.code) {
                SessionCookie.addClearing(to: &response.headers)
            }
            return response
        } catch let error as AccountsError where error.code == .sessionRevoked || (ends && Self.isClientFault(OrchardProblem(error))) {
            var problem = OrchardProblem(error)
            SessionCookie.addClearing(to: &problem.headers)
            throw problem
        } catch var problem as OrchardProblem where problem.accountsCode == .sessionRevoked || (ends && Self.isClientFault(problem)) {
            SessionCookie.addClearing(to: &problem.headers)
            throw problem
        }
    }

    /// Whether the request carries no `Origin`, or this site's.
    private func isSameOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers[HTTPField.Name("Origin")!] else { return true }
        guard let siteOrigin, let normalized = Self.normalizedOrigin(origin) else { return false }
        return normalized == siteOrigin
    }

    private static func isUnsafe(_ method: HTTPRequest.Method) -> Bool {
        method == .post || method == .put || method == .patch || method == .delete
    }

    /// A 4xx other than the CSRF refusal (which never clears: a foreign page could otherwise sign the user out).
    private static func isClientFault(_ problem: OrchardProblem) -> Bool {
        (400..<500).contains(problem.status.code) && problem.code != OrchardProblem.csrfRejected.code
    }

    private static func trimmed(_ path: String) -> String {
        var trimmed = path
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        return trimmed
    }

    /// `scheme://host[:port]`, lowercased, without the scheme's default port; `nil` for `null` or anything that is not
    /// an http(s) origin.
    static func normalizedOrigin(_ text: String) -> String? {
        guard let components = URLComponents(string: text.trimmingCharacters(in: .whitespaces)),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        let defaultPort = scheme == "https" ? 443 : 80
        let port = components.port.flatMap { $0 == defaultPort ? nil : $0 }
        let authority = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(authority)" + (port.map { ":\($0)" } ?? "")
    }
}
