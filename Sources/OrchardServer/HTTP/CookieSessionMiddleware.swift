import Accounts
import Foundation
import HTTPTypes
public import Hummingbird
import Logging

/// The rules for requests authenticated by the `__Host-orchard_session` cookie rather than a bearer token, on the
/// routes whose ``RoutePolicy`` is ``RoutePolicy/session`` or ``RoutePolicy/endsSession`` (it wraps those routes
/// only, so the rules follow the matched route however the path is spelled).
///
/// - A cookie-authenticated `POST`, `PUT`, `PATCH` or `DELETE` whose `Origin` is not this site's is refused with
///   `403 csrf_rejected` before it reaches the route (the web-flow callback is no session route: its single-use state
///   authenticates it).
/// - Cookie-authenticated answers of a route that ends the session (successes, and refusals other than server
///   faults), and every cookie-authenticated `session_revoked`, carry `Clear-Site-Data: "cookies", "storage"` and an
///   expired cookie, so that the browser drops what it holds.
///
/// Bearer-authenticated requests pass untouched: clearing site data for them would sign the user out of sibling sites.
/// The session logic itself stays in ``Accounts/AccountDesk``.
public struct CookieSessionMiddleware<Context: RequestContext>: RouterMiddleware, RouteRule {
    let endsSession: Bool
    let siteOrigin: String?

    /// Creates the middleware.
    ///
    /// - Parameters:
    ///   - endsSession: Whether the routes it wraps end the session (their cookie-authenticated answers clear the site).
    ///   - siteOrigin: This site's origin (``OrchardConfiguration/siteOrigin``); with none, any `Origin` is foreign.
    public init(endsSession: Bool, siteOrigin: String?) {
        self.endsSession = endsSession
        self.siteOrigin = siteOrigin.flatMap(Self.normalizedOrigin)
    }

    /// Handles one request.
    public func apply(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let credential = request.sessionToken, credential.viaCookie else {
            return try await next(request, context)
        }
        if Self.isUnsafe(request.method), !isSameOrigin(request) {
            // Debug: anyone can send such requests, and one line each would let them fill the log.
            context.logger.debug(
                "refused a cookie-authenticated request from another origin",
                metadata: ["http.route": "\(context.endpointPath ?? "?")"]
            )
            throw OrchardProblem.csrfRejected
        }
        let ends = endsSession
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
        } catch var problem as OrchardProblem where problem.code == .lifecycle(.sessionRevoked) || (ends && Self.isClientFault(problem)) {
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
        (400..<500).contains(problem.status.code) && problem.code != .csrfRejected
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
