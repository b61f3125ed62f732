public import Accounts
import AppleID
import Foundation
public import Hummingbird
import Logging
import Metrics
public import NIOCore
import Prometheus
import ServiceLifecycle
import Storage

/// The running parts of an Orchard built by ``buildApplication(_:onServerRunning:)``.
public struct OrchardApplication: Sendable {
    /// The HTTP application (a `Service`; run it in a `ServiceGroup` or with `runService()`).
    public var application: Application<RouterResponder<OrchardRequestContext>>
    /// The lifecycle's parts, for the CLI's operator commands and tests.
    public var lifecycle: Lifecycle
    /// Sign-in, sessions, sign-out and deletion.
    public var accounts: Accounts { lifecycle.accounts }
    /// The background jobs: run as a service unless ``OrchardDependencies/jobTick`` is `nil`, when a test drives them.
    public var jobs: JobService
}

/// The one composition root: migrates the database, wires Apple's side, the lifecycle and the HTTP routes.
///
/// - Parameters:
///   - dependencies: the real parts (or a test's).
///   - onServerRunning: called with the listening channel (tests and the demo read the bound port from it).
///   - onMetricsServerRunning: the same for the metrics listener, when `ORCHARD_METRICS_PORT` is set.
///   - onAdminServerRunning: the same for the operator listener, when `ORCHARD_ADMIN_PORT` is set.
/// - Throws: ``ConfigurationError`` for a setting that cannot be used, or a storage error when migration fails.
public func buildApplication(
    _ dependencies: OrchardDependencies,
    onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in },
    onMetricsServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in },
    onAdminServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
) async throws -> OrchardApplication {
    let configuration = dependencies.configuration
    let logger = dependencies.logger
    let (lifecycle, store) = try await buildLifecycle(dependencies)
    do {
        // An installation's first access-token key is made here, and signs at once.
        try await lifecycle.accessTokens.keys.prepare()
    } catch {
        logger.warning(
            "the access-token signing keys could not be read at start; the first request that needs them tries again",
            metadata: ["error.code": "\(error.code.rawValue)", "error.reason": "\(error.reason)"]
        )
    }
    let accounts = lifecycle.accounts

    let router = Router(context: OrchardRequestContext.self)
    let table = RouteTable()
    let perMinute = configuration.listener.rateLimitPerMinute
    let limiters =
        perMinute > 0
        ? RouteLimiters(
            clients: RateLimiter(limit: perMinute, clock: dependencies.clock),
            sessions: RateLimiter(limit: perMinute, clock: dependencies.clock)
        ) : nil
    if dependencies.tracesRequests {
        // Outermost, so the span covers the whole request, problem answers included; the span is named by the route
        // (`/v1/sessions/{id}`), and query values that may carry a credential are recorded as REDACTED.
        router.middlewares.add(
            TracingMiddleware(redactingQueryParameters: ["code", "id_token", "state", "user", "nonce", "token", "error"])
        )
    }
    // Outside the problem middleware, so that each request is counted under the status it was answered with.
    router.middlewares.add(RequestMetricsMiddleware(factory: dependencies.metrics))
    router.middlewares.add(ProblemMiddleware(routes: table, log: ProblemLog(clock: dependencies.clock)))
    let routes = OrchardRoutes(router: router, table: table) { policy in
        routeMiddlewares(policy, configuration: configuration, dependencies: dependencies, limiters: limiters)
    }
    AuthController(accounts: accounts).addRoutes(to: routes)
    WebFlowController(
        accounts: accounts,
        states: lifecycle.webFlowStates,
        redirectURI: configuration.webFlow.redirectURI,
        webClientID: configuration.webClientID,
        appleBaseURL: configuration.apple.baseURL,
        clock: dependencies.clock
    ).addRoutes(to: routes)
    AccountPageController(
        accounts: accounts,
        webFlowEnabled: configuration.webFlow.redirectURI != nil,
        appleBaseURL: configuration.apple.baseURL,
        random: dependencies.random
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
        logger.warning(
            "the OpenAPI document is not installed beside the binary: GET /openapi.yaml answers 404",
            metadata: ["openapi.expected_at": "\(OpenAPIDocument.expectedLocation)"]
        )
    }
    let metricsListener = configuration.listener.metricsPort != nil
    OperationsController(accounts: accounts, registry: dependencies.registry, servesMetrics: !metricsListener)
        .addRoutes(to: routes)

    var application = Application(
        router: router,
        server: try ServerTLS.serverBuilder(configuration),
        configuration: .init(address: .hostname(configuration.listener.host, port: configuration.listener.port), serverName: "orchard"),
        onServerRunning: onServerRunning,
        logger: logger
    )
    let jobs = backgroundJobs(lifecycle: lifecycle, store: store, dependencies: dependencies)
    if dependencies.jobTick != nil { application.addServices(jobs) }
    // The session memory's own: the writer of last_seen_at and, on PostgreSQL, the replicas' listener.
    application.addServices(store.keeper.services)
    let sharesMetricsPort = configuration.listener.adminPort.map { $0 != 0 && $0 == configuration.listener.metricsPort } ?? false
    if configuration.listener.adminPort != nil {
        application.addServices(
            try operatorApplication(
                lifecycle: lifecycle,
                store: store,
                limiters: limiters,
                servesMetrics: sharesMetricsPort,
                dependencies: dependencies,
                onServerRunning: onAdminServerRunning
            )
        )
    }
    application.addServices(
        EmailHashBackfillService(backfill: EmailHashBackfill(store: store, vault: TokenVault(keys: configuration.vaultKeys)), logger: logger)
    )
    if let metricsPort = configuration.listener.metricsPort, !sharesMetricsPort {
        application.addServices(
            metricsApplication(
                host: configuration.listener.metricsHost,
                port: metricsPort,
                registry: dependencies.registry,
                onServerRunning: onMetricsServerRunning,
                logger: logger
            )
        )
    }
    return OrchardApplication(application: application, lifecycle: lifecycle, jobs: jobs)
}

/// The budgets of the rate-limited routes, one table per kind of key (`ORCHARD_RATE_LIMIT_PER_MINUTE` each).
struct RouteLimiters: Sendable {
    /// One budget per client address, shared by the anonymous routes.
    let clients: RateLimiter<IPAddress>
    /// One budget per session, shared by the signed-in routes that end sessions or mint tokens.
    let sessions: RateLimiter<String>
}

/// The middlewares that enforce `policy` on the routes registered with it: the rate limits (one ``RateLimiter`` per kind
/// of key, so one budget per client, or per session, across every route limited by it) and the cookie rules.
func routeMiddlewares(
    _ policy: RoutePolicy,
    configuration: OrchardConfiguration,
    dependencies: OrchardDependencies,
    limiters: RouteLimiters?
) -> [any MiddlewareProtocol<Request, Response, OrchardRequestContext>] {
    func rateLimit(clearsWebState: Bool) -> [any MiddlewareProtocol<Request, Response, OrchardRequestContext>] {
        guard let limiters else { return [] }
        let resolver = ClientAddressResolver(trustedProxies: configuration.listener.trustedProxies)
        return [RateLimitMiddleware(limiter: limiters.clients, resolver: resolver, metrics: dependencies.metrics, clearsWebState: clearsWebState)]
    }
    let cookieRules = { (ends: Bool) in CookieSessionMiddleware<OrchardRequestContext>(endsSession: ends, siteOrigin: configuration.siteOrigin) }
    switch policy {
    case .open: return []
    case .anonymous: return rateLimit(clearsWebState: false)
    case .webFlowCallback: return rateLimit(clearsWebState: true)
    case .session: return [cookieRules(false)]
    case .endsSession: return [cookieRules(true)]
    case .budgetedSession:
        let budget = limiters.map { [SessionBudgetMiddleware<OrchardRequestContext>(limiter: $0.sessions, metrics: dependencies.metrics)] } ?? []
        return budget + [cookieRules(false)]
    }
}

/// The metrics listener (`ORCHARD_METRICS_PORT`): `GET /metrics` and nothing else, plain HTTP, on its own address, so
/// that the public listener need not expose it.
func metricsApplication(
    host: String,
    port: Int,
    registry: PrometheusCollectorRegistry,
    onServerRunning: @escaping @Sendable (any Channel) async -> Void,
    logger: Logger
) -> some Service {
    let router = Router(context: OrchardRequestContext.self)
    let routes = RouteTable()
    router.middlewares.add(ProblemMiddleware(routes: routes, log: ProblemLog(clock: SystemWallClock())))
    router.get("metrics") { _, _ in OperationsController<OrchardRequestContext>.metricsResponse(registry) }
    routes.add(.get, "/metrics")
    return Application(
        router: router,
        server: ServerTLS.plainHTTP(),
        configuration: .init(address: .hostname(host, port: port), serverName: "orchard-metrics"),
        onServerRunning: onServerRunning,
        logger: logger
    )
}
