import Accounts
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Authenticates every operator route and records it in the audit log before it is answered.
///
/// - The request carries `Authorization: Bearer OPERATOR_TOKEN` or the console's `__Host-orchard_admin` cookie; a
///   missing, wrong or removed one is `401 operator_unauthorized` (which one is not said), or, for a console page
///   (`GET` with ``redirectsToSignIn``), a `303` to the sign-in form. Each request asks the database, so a removed
///   operator is refused by every replica at once.
/// - A cookie-authenticated unsafe request whose `Origin` is not the listener's own (its scheme and the request's
///   `Host`) is `403 csrf_rejected`.
/// - The audit entry (operator, method, route template, the account when the route names one, status) is written
///   before the answer leaves; if it cannot be written, the answer is the storage failure instead.
struct OperatorMiddleware: RouterMiddleware {
    typealias Context = OrchardRequestContext

    let operators: Operators
    /// `http` or `https`: the listener's scheme, for the `Origin` check.
    let scheme: String
    /// Whether an unauthenticated `GET` is sent to the sign-in form rather than refused.
    let redirectsToSignIn: Bool
    /// Whether an unauthenticated request passes through with no operator (the console's front page shows the form).
    let allowsAnonymous: Bool

    init(operators: Operators, scheme: String, redirectsToSignIn: Bool = false, allowsAnonymous: Bool = false) {
        self.operators = operators
        self.scheme = scheme
        self.redirectsToSignIn = redirectsToSignIn
        self.allowsAnonymous = allowsAnonymous
    }

    func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        let credential = Self.credential(request)
        var name: String?
        if let credential {
            name =
                credential.viaCookie
                ? try await operators.consoleOperator(login: credential.value)
                : try await operators.authenticate(token: credential.value)
        }
        guard let name else {
            if allowsAnonymous { return try await next(request, context) }
            if redirectsToSignIn, request.method == .get {
                return Response(status: .seeOther, headers: [.location: "/admin", .cacheControl: "no-store"])
            }
            context.logger.debug("refused an operator request without a valid credential", metadata: ["http.route": "\(context.endpointPath ?? "?")"])
            throw OrchardProblem.operatorUnauthorized
        }
        var context = context
        context.operatorName = name
        if credential?.viaCookie == true, Self.isUnsafe(request.method), !isSameOrigin(request) {
            try await record(request, context: context, status: OrchardProblem.csrfRejected.status.code)
            throw OrchardProblem.csrfRejected
        }
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            try await record(request, context: context, status: Self.status(of: error))
            throw error
        }
        try await record(request, context: context, status: response.status.code)
        return response
    }

    /// The bearer token, else the console cookie.
    static func credential(_ request: Request) -> (value: String, viaCookie: Bool)? {
        if let authorization = request.headers[.authorization], let token = Request.bearerToken(authorization) {
            return (token, false)
        }
        if let cookie = request.cookies[OperatorCookie.name]?.value, !cookie.isEmpty {
            return (cookie, true)
        }
        return nil
    }

    private func record(_ request: Request, context: Context, status: Int) async throws {
        guard let name = context.operatorName else { return }
        let route = Self.template(context.endpointPath ?? request.uri.path)
        // Only an account named by the route: never a query (a search's `q` is an email or a subject).
        let accountID = route.contains("/accounts/{id}") ? context.parameters.get("id") : nil
        try await operators.record(operatorName: name, method: request.method.rawValue, route: route, accountID: accountID, status: status)
    }

    /// `/admin/v1/accounts/:id` as the contract writes it, `/admin/v1/accounts/{id}`.
    static func template(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            segment.hasPrefix(":") ? "{\(segment.dropFirst())}" : String(segment)
        }.joined(separator: "/")
    }

    /// The status an error is answered with (``ProblemMiddleware`` maps it the same way).
    static func status(of error: any Error) -> Int {
        switch error {
        case let problem as OrchardProblem: problem.status.code
        case let error as AccountsError: OrchardProblem(error).status.code
        case let error as any HTTPResponseError: error.status.code
        default: 500
        }
    }

    private static func isUnsafe(_ method: HTTPRequest.Method) -> Bool {
        method == .post || method == .put || method == .patch || method == .delete
    }

    /// No `Origin` (not a browser's cross-site request), or exactly this listener's: its scheme and the `Host` asked.
    private func isSameOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers[HTTPField.Name("Origin")!] else { return true }
        guard let host = request.head.authority else { return false }
        return origin.lowercased() == "\(scheme)://\(host.lowercased())"
    }
}

extension OrchardProblem {
    /// `401 operator_unauthorized`: which credential is wrong, or that one was missing, is not said.
    static let operatorUnauthorized = OrchardProblem(
        .operatorUnauthorized,
        detail: "an operator route needs a valid operator token (Authorization: Bearer) or a console login"
    )
}
