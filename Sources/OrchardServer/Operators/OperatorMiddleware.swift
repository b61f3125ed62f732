import Accounts
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics

/// Authenticates every operator route and records it in the audit log before it is answered.
///
/// - The request carries `Authorization: Bearer OPERATOR_TOKEN` or the console's `__Host-orchard_admin` cookie; a
///   missing, wrong or removed one is `401 operator_unauthorized` (which one is not said), or, for a console page
///   (`GET` with ``redirectsToSignIn``), a `303` to the sign-in form. Each request asks the database, so a removed
///   operator is refused by every replica at once.
/// - A cookie-authenticated unsafe request whose `Origin` is not the listener's own (its scheme and the request's
///   `Host`), or that carries none, is `403 csrf_rejected` (browsers send `Origin` with every such request).
/// - The audit entry (operator, method, route template, the account when the route names one that exists, status) is
///   written before the answer leaves; for a request that changes something, before it is acted on (status 0 until
///   it is answered), so that no operator action happens unrecorded: if the entry cannot be written, nothing is done
///   and the answer is the storage failure.
/// - A credential that opens nothing costs its client address a request of a budget of the anonymous routes' size (its
///   own, so that users behind the same address do not lock operators out); an address whose budget is spent is
///   `429 rate_limited` before its credential is looked up, so that whoever reaches the listener cannot make each
///   guess cost a database read.
/// - Every answer is `Cache-Control: no-store`: it shows users' personal data.
struct OperatorMiddleware: RouterMiddleware {
    typealias Context = OrchardRequestContext

    let operators: Operators
    /// `http` or `https`: the listener's scheme, for the `Origin` check.
    let scheme: String
    /// Whether an unauthenticated `GET` is sent to the sign-in form rather than refused.
    let redirectsToSignIn: Bool
    /// Whether an unauthenticated request passes through with no operator (the console's front page shows the form).
    let allowsAnonymous: Bool
    /// The budget credentials that open nothing draw from; `nil` without a rate limit.
    let failures: FailedCredentialBudget?

    init(
        operators: Operators,
        scheme: String,
        failures: FailedCredentialBudget?,
        redirectsToSignIn: Bool = false,
        allowsAnonymous: Bool = false
    ) {
        self.operators = operators
        self.scheme = scheme
        self.failures = failures
        self.redirectsToSignIn = redirectsToSignIn
        self.allowsAnonymous = allowsAnonymous
    }

    func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        let credential = Self.credential(request)
        var name: String?
        if let credential {
            try failures?.refuseIfSpent(request, context: context)
            name =
                credential.viaCookie
                ? try await operators.consoleOperator(login: credential.value)
                : try await operators.authenticate(token: credential.value)
            if name == nil { failures?.charge(request, context: context) }
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
        // A change is on record before it is made; a read, before it is answered.
        let entry = Self.isUnsafe(request.method) ? try await record(request, context: context, status: 0) : nil
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            try await complete(entry, request, context: context, status: Self.status(of: error))
            throw error
        }
        try await complete(entry, request, context: context, status: response.status.code)
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// Completes the entry written before the request was acted on, or writes the read's.
    private func complete(_ entry: String?, _ request: Request, context: Context, status: Int) async throws {
        guard let entry else {
            try await record(request, context: context, status: status)
            return
        }
        try await operators.complete(entry: entry, status: status, accountID: Self.accountID(request, context: context, status: status))
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

    @discardableResult
    private func record(_ request: Request, context: Context, status: Int) async throws -> String? {
        guard let name = context.operatorName else { return nil }
        let route = Self.template(context.endpointPath ?? request.uri.path)
        return try await operators.record(
            operatorName: name,
            method: request.method.rawValue,
            route: route,
            accountID: Self.accountID(request, context: context, status: status),
            status: status
        )
    }

    /// The account a request concerned: only one named by the route (never a query: a search's `q` is an email or a
    /// subject), and only once it was found (status 1xx–3xx): what was typed into a path that found nothing may be an
    /// email, and stays out of the log.
    private static func accountID(_ request: Request, context: Context, status: Int) -> String? {
        let route = template(context.endpointPath ?? request.uri.path)
        guard route.contains("/accounts/{id}"), (100..<400).contains(status) else { return nil }
        return context.parameters.get("id")
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

    /// Exactly this listener's `Origin`: its scheme and the `Host` asked. A request without one is refused too.
    private func isSameOrigin(_ request: Request) -> Bool {
        Self.isSameOrigin(request, scheme: scheme)
    }

    /// Whether `request` carries this listener's own `Origin` (its scheme and the `Host` asked).
    static func isSameOrigin(_ request: Request, scheme: String) -> Bool {
        guard let origin = request.headers[HTTPField.Name("Origin")!], let host = request.head.authority else { return false }
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

/// A budget per client address, drawn from by operator credentials that open nothing.
struct FailedCredentialBudget: Sendable {
    let limiter: RateLimiter<IPAddress>
    let resolver: ClientAddressResolver
    let refused: Counter

    init(limiter: RateLimiter<IPAddress>, resolver: ClientAddressResolver, metrics: any MetricsFactory) {
        self.limiter = limiter
        self.resolver = resolver
        self.refused = .rateLimited(metrics)
    }

    /// `429 rate_limited` when the client's budget is spent.
    func refuseIfSpent(_ request: Request, context: OrchardRequestContext) throws {
        guard let client = resolver.client(of: request, context: context), let retryAfter = limiter.exhausted(client.budgetKey) else { return }
        refused.increment()
        throw OrchardProblem.rateLimited("too many credentials that open nothing from this address", retryAfter: retryAfter)
    }

    /// Takes a request from the client's budget.
    func charge(_ request: Request, context: OrchardRequestContext) {
        guard let client = resolver.client(of: request, context: context) else { return }
        _ = limiter.acquire(client.budgetKey)
    }
}
