import ArgumentParser
import AsyncHTTPClient
import Hummingbird
import Logging
import OrchardServer
import ServiceLifecycle
import Storage
import UnixSignals

/// `orchard serve`.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP server and the background services until SIGINT/SIGTERM.",
        discussion: """
            Needs APPLE_TEAM_ID, APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE, APPLE_CLIENT_IDS and ORCHARD_VAULT_KEYS. \
            Migrates the database at start. On SIGTERM or SIGINT it stops accepting and claiming, lets open requests \
            and claimed jobs finish for up to ORCHARD_SHUTDOWN_GRACE seconds (default 10), then exits 0.
            """
    )

    func run() async throws {
        let configuration = try await CommandSupport.loadConfiguration(needs: .all)
        CommandSupport.bootstrapLogging(level: configuration.logLevel)
        let registry = CommandSupport.bootstrapMetrics()
        let logger = Logger(label: "orchard")
        let database = await CommandSupport.openDatabase(configuration, logger: logger)
        let httpClient = HTTPClient.makeOrchardClient()
        do {
            let built = try await buildApplication(
                OrchardDependencies(
                    configuration: configuration,
                    database: database,
                    httpClient: httpClient,
                    registry: registry,
                    logger: logger
                )
            )
            // Shut down in reverse order: the application first (the server stops accepting and lets open requests
            // finish; the job loops stop claiming and let claimed jobs record their outcomes), and only then the HTTP
            // client those jobs use to reach Apple and the receivers. Past ORCHARD_SHUTDOWN_GRACE, what is left is
            // cancelled (and its jobs are taken over when their leases end).
            var group = ServiceGroupConfiguration(
                services: [
                    .init(service: HTTPClientService(client: httpClient)),
                    .init(service: built.application),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
            group.maximumGracefulShutdownDuration = configuration.shutdownGrace
            group.maximumCancellationDuration = .seconds(5)
            try await ServiceGroup(configuration: group).run()
        } catch let error as ConfigurationError {
            try? await httpClient.shutdown()
            CommandSupport.fail(error)
        }
        await database.close()
    }
}
