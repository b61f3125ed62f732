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
    public var accounts: AccountDesk { lifecycle.accounts }
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
    let limiters = RouteLimiters(configuration.listener, clock: dependencies.clock)
    let router = publicRouter(
        lifecycle: lifecycle,
        configuration: configuration,
        limiters: limiters,
        parts: RouterParts(
            clock: dependencies.clock,
            random: dependencies.random,
            registry: dependencies.registry,
            metrics: dependencies.metrics,
            logger: logger,
            tracesRequests: dependencies.tracesRequests
        )
    )

    var application = Application(
        router: router,
        server: try ServerTLS.serverBuilder(configuration),
        configuration: .init(address: .hostname(configuration.listener.host, port: configuration.listener.port), serverName: "orchard"),
        onServerRunning: onServerRunning,
        logger: logger
    )
    let roster = dependencies.roster
    // The application's group shuts its services down in reverse order (the HTTP server first): the session memory's
    // own (the writer of last_seen_at, the sweep and, on PostgreSQL, the replicas' listener) come before the job loops,
    // so that they stop after them, and a job that ends sessions during shutdown still tells the other replicas.
    application.addServices(store.keeper.services.map { roster.track($0, as: "\(type(of: $0))") })
    let jobs = backgroundJobs(lifecycle: lifecycle, store: store, dependencies: dependencies)
    if dependencies.jobTick != nil { application.addServices(roster.track(jobs, as: "JobService")) }
    let sharesMetricsPort = configuration.listener.adminPort.map { $0 != 0 && $0 == configuration.listener.metricsPort } ?? false
    if configuration.listener.adminPort != nil {
        let operators = try operatorApplication(
            lifecycle: lifecycle,
            store: store,
            limiters: limiters,
            servesMetrics: sharesMetricsPort,
            dependencies: dependencies,
            onServerRunning: onAdminServerRunning
        )
        application.addServices(roster.track(operators, as: "OperatorListener"))
    }
    application.addServices(
        roster.track(
            EmailHashBackfillService(backfill: EmailHashBackfill(store: store, vault: TokenVault(keys: configuration.vaultKeys)), logger: logger),
            as: "EmailHashBackfill"
        )
    )
    if let metricsPort = configuration.listener.metricsPort, !sharesMetricsPort {
        let metrics = metricsApplication(
            host: configuration.listener.metricsHost,
            port: metricsPort,
            registry: dependencies.registry,
            onServerRunning: onMetricsServerRunning,
            logger: logger
        )
        application.addServices(roster.track(metrics, as: "MetricsListener"))
    }
    return OrchardApplication(application: application, lifecycle: lifecycle, jobs: jobs)
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
