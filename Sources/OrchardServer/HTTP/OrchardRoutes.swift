public import HTTPTypes
public import Hummingbird

/// Where controllers register their routes: each route names its path, method and ``RoutePolicy`` once, and its
/// handler runs inside that policy's rules (``RouteRule``), so the policy is read from the matched route, never from
/// the request's spelling of the path. The ``RouteTable`` learns every route for the `405` answers.
public struct OrchardRoutes<Context: RequestContext> {
    private let router: Router<Context>
    private let rules: [RoutePolicy: [any RouteRule<Context>]]
    /// The served routes (for `405`).
    public let table: RouteTable

    /// Creates the registrar over `router`.
    ///
    /// - Parameters:
    ///   - router: The router every route is added to.
    ///   - table: The table the ``ProblemMiddleware`` reads.
    ///   - rules: The rules that enforce each policy, outermost first.
    public init(
        router: Router<Context>,
        table: RouteTable,
        rules: (RoutePolicy) -> [any RouteRule<Context>]
    ) {
        self.router = router
        self.rules = Dictionary(uniqueKeysWithValues: RoutePolicy.allCases.map { ($0, rules($0)) })
        self.table = table
    }

    /// Adds a route.
    ///
    /// - Parameters:
    ///   - method: The method it answers.
    ///   - path: Its path, with `{name}` for a parameter (`/v1/sessions/{id}`).
    ///   - policy: What the rules enforce on it.
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
        let rules = self.rules[policy] ?? []
        if rules.isEmpty {
            router.on(RouterPath(routerPath), method: method, use: handler)
        } else {
            // Typed here, in this module, so that the closure runs where its caller does (as `handler` does) instead of
            // being Hummingbird's `@concurrent` closure, whose entry and return each go through the loop's queue.
            let ruled: @Sendable (Request, Context) async throws -> Response = { request, context in
                try await Self.run(rules[...], request, context, handler)
            }
            router.on(RouterPath(routerPath), method: method, use: ruled)
        }
        table.add(method, path)
    }

    /// `handler`'s answer to `request`, inside `rules` (the first outermost).
    private static func run<Output: ResponseGenerator>(
        _ rules: ArraySlice<any RouteRule<Context>>,
        _ request: Request,
        _ context: Context,
        _ handler: @Sendable (Request, Context) async throws -> Output
    ) async throws -> Response {
        guard let rule = rules.first else { return try await handler(request, context).response(from: request, context: context) }
        return try await rule.apply(request, context: context) { request, context in
            try await run(rules.dropFirst(), request, context, handler)
        }
    }
}
