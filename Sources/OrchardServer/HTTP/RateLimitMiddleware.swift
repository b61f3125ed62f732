import HTTPTypes
public import Hummingbird
import Logging
public import Metrics
import NIOCore

/// `429 rate_limited` with `Retry-After` for a client past ``RateLimiter/limit`` requests per minute, before the route
/// runs, so that a refused request stores nothing. It wraps the ``RoutePolicy/anonymous`` and
/// ``RoutePolicy/webFlowCallback`` routes (the four that issue nonces and states or sign in), which share one
/// ``RateLimiter`` and so one budget per client; the notification endpoint is not limited.
public struct RateLimitMiddleware<Context: RemoteAddressRequestContext>: RouterMiddleware, RouteRule {
    let limiter: RateLimiter<IPAddress>
    let resolver: ClientAddressResolver
    let refused: Counter
    let clearsWebState: Bool

    /// Creates the middleware.
    ///
    /// - Parameters:
    ///   - limiter: The budgets, shared by every limited route, one per client (an IPv6 client's is its /64's,
    ///     ``IPAddress/budgetKey``).
    ///   - resolver: Who the client is.
    ///   - metrics: Where refusals are counted.
    ///   - clearsWebState: Whether a refusal also clears the web flow's binder (the callback's answers all do).
    public init(limiter: RateLimiter<IPAddress>, resolver: ClientAddressResolver, metrics: any MetricsFactory, clearsWebState: Bool = false) {
        self.limiter = limiter
        self.resolver = resolver
        self.refused = .rateLimited(metrics)
        self.clearsWebState = clearsWebState
    }

    /// Handles one request.
    public func apply(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let client = resolver.client(of: request, context: context), let retryAfter = limiter.acquire(client.budgetKey) else {
            return try await next(request, context)
        }
        refused.increment()
        context.logger.debug("refused a request over the rate limit", metadata: ["http.route": "\(context.endpointPath ?? "?")"])
        throw OrchardProblem.rateLimited(
            "more than \(limiter.limit) requests a minute from this address",
            retryAfter: retryAfter,
            headers: clearsWebState ? [.setCookie: WebStateCookie.expiredCookie] : [:]
        )
    }
}

extension OrchardProblem {
    /// `429 rate_limited` with `Retry-After`: the one answer of every budget (an address's, a session's, an address's
    /// failed operator credentials), saying whose budget is spent and when to come back.
    static func rateLimited(_ spent: String, retryAfter: Int, headers: HTTPFields = [:]) -> OrchardProblem {
        var headers = headers
        headers[.retryAfter] = String(retryAfter)
        return OrchardProblem(.rateLimited, detail: "\(spent); retry after \(retryAfter) s", headers: headers)
    }
}

extension Counter {
    /// The one count of requests refused by any budget.
    static func rateLimited(_ metrics: any MetricsFactory) -> Counter {
        Counter(label: "orchard_rate_limited_total", factory: metrics)
    }
}

extension ClientAddressResolver {
    /// The client behind `request`: its peer, or the address a trusted proxy forwarded for it.
    func client(of request: Request, context: some RemoteAddressRequestContext) -> IPAddress? {
        let peer = context.remoteAddress?.ipAddress.flatMap { IPAddress($0) }
        return client(peer: peer, forwardedFor: request.headers[values: .xForwardedFor])
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
