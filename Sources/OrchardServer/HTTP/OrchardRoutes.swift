public import HTTPTypes
public import Hummingbird

/// Where controllers register their routes: each route names its path, method and ``RoutePolicy`` once, and lands in
/// the router group that carries that policy's middlewares, so the policy is read from the matched route, never from
/// the request's spelling of the path. The ``RouteTable`` learns every route for the `405` answers.
public struct OrchardRoutes<Context: RequestContext> {
    private let groups: [RoutePolicy: RouterGroup<Context>]
    /// The served routes (for `405`).
    public let table: RouteTable

    /// Creates the registrar over `router`.
    ///
    /// - Parameters:
    ///   - router: The router every route is added to.
    ///   - table: The table the ``ProblemMiddleware`` reads.
    ///   - middlewares: The middlewares that enforce each policy, innermost last.
    public init(
        router: Router<Context>,
        table: RouteTable,
        middlewares: (RoutePolicy) -> [any MiddlewareProtocol<Request, Response, Context>]
    ) {
        var groups: [RoutePolicy: RouterGroup<Context>] = [:]
        for policy in RoutePolicy.allCases {
            let group = router.group()
            for middleware in middlewares(policy) { group.add(middleware: middleware) }
            groups[policy] = group
        }
        self.groups = groups
        self.table = table
    }

    /// Adds a route.
    ///
    /// - Parameters:
    ///   - method: The method it answers.
    ///   - path: Its path, with `{name}` for a parameter (`/v1/sessions/{id}`).
    ///   - policy: What the middlewares enforce on it.
    ///   - handler: The handler.
    public func add<Output: ResponseGenerator>(
        _ method: HTTPRequest.Method,
        _ path: String,
        _ policy: RoutePolicy = .open,
        use handler: @escaping @Sendable (Request, Context) async throws -> Output
    ) {
        let routerPath = path.split(separator: "/").map { segment in
            segment.hasPrefix("{") && segment.hasSuffix("}") ? ":" + segment.dropFirst().dropLast() : segment
        }.joined(separator: "/")
        groups[policy]!.on(RouterPath(routerPath), method: method, use: handler)
        table.add(method, path)
    }
}
