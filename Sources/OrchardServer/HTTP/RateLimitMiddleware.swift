import HTTPTypes
public import Hummingbird
import Logging
public import Metrics
import NIOCore

/// `429 rate_limited` with `Retry-After` for a client past ``RateLimiter/limit`` requests per minute on the anonymous
/// routes (the four that issue nonces and states or sign in), before the route runs, so that a refused request stores
/// nothing. One budget per client address is shared by the four routes; the notification endpoint is not limited.
public struct RateLimitMiddleware<Context: RemoteAddressRequestContext>: RouterMiddleware {
    /// The limited routes, as `METHOD /path`.
    public static var limitedRoutes: Set<String> {
        [
            "POST /v1/auth/apple/nonce",
            "POST /v1/auth/apple",
            "GET /v1/auth/apple/authorize",
            "POST /v1/auth/apple/callback",
        ]
    }

    let limiter: RateLimiter
    let resolver: ClientAddressResolver
    let refused: Counter

    /// Creates the middleware.
    public init(limiter: RateLimiter, resolver: ClientAddressResolver, metrics: any MetricsFactory) {
        self.limiter = limiter
        self.resolver = resolver
        self.refused = Counter(label: "orchard_rate_limited_total", factory: metrics)
    }

    /// Handles one request.
    public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        var path = Substring(request.uri.path)
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        guard Self.limitedRoutes.contains("\(request.method.rawValue) \(path)") else {
            return try await next(request, context)
        }
        let peer = context.remoteAddress?.ipAddress.flatMap { IPAddress($0) }
        guard let client = resolver.client(peer: peer, forwardedFor: request.headers[values: .xForwardedFor]) else {
            return try await next(request, context)
        }
        guard let retryAfter = limiter.acquire(client) else {
            return try await next(request, context)
        }
        refused.increment()
        context.logger.debug("refused a request over the rate limit", metadata: ["http.path": "\(path)"])
        var headers = HTTPFields()
        headers[.retryAfter] = String(retryAfter)
        if path == Substring(WebStateCookie.path) {
            // Every answer of the callback clears the flow's binder, this one included.
            headers.append(HTTPField(name: .setCookie, value: WebStateCookie.expiredCookie))
        }
        throw OrchardProblem(
            .tooManyRequests,
            code: "rate_limited",
            title: "Rate limited",
            detail: "more than \(limiter.limit) requests a minute from this address; retry after \(retryAfter) s",
            headers: headers
        )
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
