public import Hummingbird

/// A rule a ``RoutePolicy`` puts around each of its routes (a rate limit, a session's budget, the cookie rules), run by
/// ``OrchardRoutes`` inside the route's own handler.
///
/// Not a layer of Hummingbird's middleware chain: a layer enters its `handle` and its `next` through Hummingbird's
/// `@concurrent` closures, and since serve runs Swift concurrency on the event loops as their serial executors, each of
/// those entries and returns is a trip through the loop's queue. A rule's `apply` and `next` are Orchard's own and run
/// where their caller runs: the session check's cookie rules took seven trips as a layer and take three as a rule
/// (Benchmarks/README, A18). A rule is also a middleware (``handle(_:context:next:)``), for a router built without
/// ``OrchardRoutes``.
public protocol RouteRule<Context>: Sendable {
    /// The request context of the routes it applies to.
    associatedtype Context: RequestContext

    /// Runs the rule for `request`: answers or refuses it, or calls `next` (the route, or the next rule).
    func apply(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response
}

extension RouteRule {
    /// The rule as a middleware.
    public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        try await apply(request, context: context, next: next)
    }
}
