public import Accounts
public import AppleID
public import Hummingbird
public import Logging
public import Metrics
public import Prometheus

/// What the public routes need beside the lifecycle and the settings.
public struct RouterParts: Sendable {
    /// The wall clock (rate limits, the web flow's states, the outage log's spacing).
    public var clock: any WallClock
    /// The randomness for the account page's nonces.
    public var random: any RandomSource
    /// Where `/metrics` reads from.
    public var registry: PrometheusCollectorRegistry
    /// Where the request metrics go.
    public var metrics: any MetricsFactory
    /// The logger for start-up warnings about the routes.
    public var logger: Logger
    /// Whether each request gets a server span.
    public var tracesRequests: Bool

    /// Gathers the parts.
    public init(
        clock: any WallClock,
        random: any RandomSource,
        registry: PrometheusCollectorRegistry,
        metrics: any MetricsFactory,
        logger: Logger,
        tracesRequests: Bool = false
    ) {
        self.clock = clock
        self.random = random
        self.registry = registry
        self.metrics = metrics
        self.logger = logger
        self.tracesRequests = tracesRequests
    }
}

/// The public listener's router over `lifecycle`, as `serve` answers: every route with its policy (rate limits, session
/// budgets, cookie rules), the problem answers and the request metrics. ``buildApplication(_:onServerRunning:onMetricsServerRunning:onAdminServerRunning:)``
/// serves it; the fast tier of tests drives the same router in process (HummingbirdTesting's router mode) over the
/// in-memory store.
public func buildRouter(lifecycle: Lifecycle, configuration: OrchardConfiguration, parts: RouterParts) -> Router<OrchardRequestContext> {
    publicRouter(
        lifecycle: lifecycle,
        configuration: configuration,
        limiters: RouteLimiters(configuration.listener, clock: parts.clock),
        parts: parts
    )
}

func publicRouter(
    lifecycle: Lifecycle,
    configuration: OrchardConfiguration,
    limiters: RouteLimiters?,
    parts: RouterParts
) -> Router<OrchardRequestContext> {
    let accounts = lifecycle.accounts
    let router = Router(context: OrchardRequestContext.self)
    let table = RouteTable()
    if parts.tracesRequests {
        // Outermost, so the span covers the whole request, problem answers included; the span is named by the route
        // (`/v1/sessions/{id}`), and query values that may carry a credential are recorded as REDACTED.
        router.middlewares.add(
            TracingMiddleware(redactingQueryParameters: ["code", "id_token", "state", "user", "nonce", "token", "error"])
        )
    }
    // Outside the problem middleware, so that each request is counted under the status it was answered with.
    router.middlewares.add(RequestMetricsMiddleware(factory: parts.metrics))
    router.middlewares.add(ProblemMiddleware(routes: table, log: ProblemLog(clock: parts.clock)))
    let routes = OrchardRoutes(router: router, table: table) { policy in
        routeRules(policy, configuration: configuration, metrics: parts.metrics, limiters: limiters)
    }
    AuthController(accounts: accounts).addRoutes(to: routes)
    WebFlowController(
        accounts: accounts,
        states: lifecycle.webFlowStates,
        redirectURI: configuration.webFlow.redirectURI,
        webClientID: configuration.webClientID,
        appleBaseURL: configuration.apple.baseURL,
        clock: parts.clock
    ).addRoutes(to: routes)
    AccountPageController(
        accounts: accounts,
        webFlowEnabled: configuration.webFlow.redirectURI != nil,
        appleBaseURL: configuration.apple.baseURL,
        random: parts.random
    ).addRoutes(to: routes)
    SessionController(accounts: accounts).addRoutes(to: routes)
    HistoryController(accounts: accounts).addRoutes(to: routes)
    TokenController(
        tokens: lifecycle.accessTokens,
        publicBase: AccessTokenConfiguration.defaultIssuer(listener: configuration.listener, webFlow: configuration.webFlow)
    ).addRoutes(to: routes)
    AccountController(accounts: accounts).addRoutes(to: routes)
    NotificationController(notifications: lifecycle.notifications).addRoutes(to: routes)
    if OpenAPIDocument.bytes == nil {
        parts.logger.warning(
            "the OpenAPI document is not installed beside the binary: GET /openapi.yaml answers 404",
            metadata: ["openapi.expected_at": "\(OpenAPIDocument.expectedLocation)"]
        )
    }
    let metricsListener = configuration.listener.metricsPort != nil
    OperationsController(accounts: accounts, registry: parts.registry, servesMetrics: !metricsListener)
        .addRoutes(to: routes)
    return router
}

/// The budgets of the rate-limited routes, one table per kind of key (`ORCHARD_RATE_LIMIT_PER_MINUTE` each).
struct RouteLimiters: Sendable {
    /// One budget per client address, shared by the anonymous routes.
    let clients: RateLimiter<IPAddress>
    /// One budget per session, shared by the signed-in routes that end sessions or mint tokens.
    let sessions: RateLimiter<String>

    /// The budgets `listener` sets, or `nil` when `ORCHARD_RATE_LIMIT_PER_MINUTE` is 0 (no limit).
    init?(_ listener: ListenerConfiguration, clock: any WallClock) {
        let perMinute = listener.rateLimitPerMinute
        guard perMinute > 0 else { return nil }
        clients = RateLimiter(limit: perMinute, clock: clock)
        sessions = RateLimiter(limit: perMinute, clock: clock)
    }
}

/// The rules that enforce `policy` on the routes registered with it: the rate limits (one ``RateLimiter`` per kind of
/// key, so one budget per client, or per session, across every route limited by it) and the cookie rules.
func routeRules(
    _ policy: RoutePolicy,
    configuration: OrchardConfiguration,
    metrics: any MetricsFactory,
    limiters: RouteLimiters?
) -> [any RouteRule<OrchardRequestContext>] {
    func rateLimit(clearsWebState: Bool) -> [any RouteRule<OrchardRequestContext>] {
        guard let limiters else { return [] }
        let resolver = ClientAddressResolver(trustedProxies: configuration.listener.trustedProxies)
        return [RateLimitMiddleware(limiter: limiters.clients, resolver: resolver, metrics: metrics, clearsWebState: clearsWebState)]
    }
    let cookieRules = { (ends: Bool) in CookieSessionMiddleware<OrchardRequestContext>(endsSession: ends, siteOrigin: configuration.siteOrigin) }
    switch policy {
    case .open: return []
    case .anonymous: return rateLimit(clearsWebState: false)
    case .webFlowCallback: return rateLimit(clearsWebState: true)
    case .session: return [cookieRules(false)]
    case .endsSession: return [cookieRules(true)]
    case .budgetedSession:
        let budget = limiters.map { [SessionBudgetMiddleware<OrchardRequestContext>(limiter: $0.sessions, metrics: metrics)] } ?? []
        return budget + [cookieRules(false)]
    }
}
