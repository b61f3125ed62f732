import Accounts
import Foundation
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle
import Storage

/// The operator listener (`ORCHARD_ADMIN_PORT`): the operator API and console, and `/metrics` too when it shares the
/// metrics listener's port. Built-in TLS, when configured, applies here as on the public listener.
func operatorApplication(
    lifecycle: Lifecycle,
    store: SQLAccountStore,
    limiters: RouteLimiters?,
    servesMetrics: Bool,
    dependencies: OrchardDependencies,
    onServerRunning: @escaping @Sendable (any Channel) async -> Void
) throws -> some Service {
    let configuration = dependencies.configuration
    let operators = Operators(store: store, clock: dependencies.clock, random: dependencies.random)
    let desk = OperatorDesk(lifecycle: lifecycle, store: store)
    let scheme = configuration.listener.tlsCertificateFile == nil ? "http" : "https"
    let router = Router(context: OrchardRequestContext.self)
    let table = RouteTable()
    router.middlewares.add(RequestMetricsMiddleware(factory: dependencies.metrics))
    router.middlewares.add(ProblemMiddleware(routes: table, log: ProblemLog(clock: dependencies.clock)))
    // Credentials that open nothing have a budget of their own, of the anonymous routes' size: an address whose users
    // spend the anonymous budget does not lock its operators out.
    let failures = limiters.map {
        FailedCredentialBudget(
            limiter: RateLimiter(limit: $0.clients.limit, clock: dependencies.clock),
            resolver: ClientAddressResolver(trustedProxies: configuration.listener.trustedProxies),
            metrics: dependencies.metrics
        )
    }
    let api = router.group().add(middleware: OperatorMiddleware(operators: operators, scheme: scheme, failures: failures))
    let pages = router.group().add(
        middleware: OperatorMiddleware(operators: operators, scheme: scheme, failures: failures, redirectsToSignIn: true)
    )
    let front = router.group().add(
        middleware: OperatorMiddleware(operators: operators, scheme: scheme, failures: failures, allowsAnonymous: true)
    )
    // Failed logins share the anonymous routes' budget per client address.
    let login = router.group()
    if let limiters {
        login.add(
            middleware: RateLimitMiddleware(
                limiter: limiters.clients,
                resolver: ClientAddressResolver(trustedProxies: configuration.listener.trustedProxies),
                metrics: dependencies.metrics
            )
        )
    }
    let teams = configuration.apple.allTeams
    OperatorAPIController(desk: desk, accounts: lifecycle.accounts, operators: operators, teams: teams).addRoutes(to: api, table: table)
    ConsoleController(
        desk: desk,
        accounts: lifecycle.accounts,
        operators: operators,
        teams: teams,
        clock: dependencies.clock,
        random: dependencies.random,
        scheme: scheme
    ).addRoutes(front: front, login: login, pages: pages, table: table)
    if servesMetrics {
        let registry = dependencies.registry
        router.get("metrics") { _, _ in OperationsController<OrchardRequestContext>.metricsResponse(registry) }
        table.add(.get, "/metrics")
    }
    return Application(
        router: router,
        server: try ServerTLS.serverBuilder(configuration),
        configuration: .init(
            address: .hostname(configuration.listener.adminHost, port: configuration.listener.adminPort ?? 0),
            serverName: "orchard-admin"
        ),
        onServerRunning: onServerRunning,
        logger: dependencies.logger
    )
}

/// Fills the email hashes of accounts from before they were kept, once, in the background, then waits for shutdown.
struct EmailHashBackfillService: Service {
    let backfill: EmailHashBackfill
    let logger: Logger

    func run() async throws {
        do {
            let filled = try await backfill.run()
            if filled > 0 {
                logger.info("accounts from before email hashes were kept can now be found by email", metadata: ["accounts": "\(filled)"])
            }
        } catch is CancellationError {
            return
        } catch {
            logger.warning("the email hashes of older accounts could not be filled yet; the next start tries again", metadata: ["error": "\(error)"])
        }
        try? await gracefulShutdown()
    }
}
