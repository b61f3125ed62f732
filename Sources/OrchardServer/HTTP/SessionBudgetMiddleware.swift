import AppleID
import Crypto
import HTTPTypes
public import Hummingbird
import Logging
public import Metrics

/// `429 rate_limited` with `Retry-After` for a session past ``RateLimiter/limit`` requests a minute to the signed-in
/// routes that end sessions or mint access tokens (``RoutePolicy/budgetedSession``), checked before anything else: a
/// signed-in client cannot make Orchard do more work (a commit announced to every replica, a signature) than its own
/// sessions justify. The budget is the presented token's, kept by its SHA-256 (the token itself is never held), so a
/// request with no token passes on to be refused as `session_invalid`.
public struct SessionBudgetMiddleware<Context: RequestContext>: RouterMiddleware, RouteRule {
    let limiter: RateLimiter<String>
    let refused: Counter

    /// Creates the middleware over the budgets every budgeted route shares.
    public init(limiter: RateLimiter<String>, metrics: any MetricsFactory) {
        self.limiter = limiter
        self.refused = .rateLimited(metrics)
    }

    /// Handles one request.
    public func apply(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let (token, _) = request.sessionToken, let retryAfter = limiter.acquire(SHA256.hash(utf8: token).hexString) else {
            return try await next(request, context)
        }
        refused.increment()
        context.logger.debug("refused a session's request over its budget", metadata: ["http.route": "\(context.endpointPath ?? "?")"])
        throw OrchardProblem.rateLimited("more than \(limiter.limit) requests a minute from this session", retryAfter: retryAfter)
    }
}
