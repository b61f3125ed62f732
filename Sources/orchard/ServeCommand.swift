import ArgumentParser
import AsyncHTTPClient
import Hummingbird
import Logging
import OrchardServer
import Storage

/// `orchard serve`.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP server and the background services until SIGINT/SIGTERM.",
        discussion: """
            Needs APPLE_TEAM_ID, APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE, APPLE_CLIENT_IDS and ORCHARD_VAULT_KEYS. \
            Migrates the database at start.
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
            var built = try await buildApplication(
                OrchardDependencies(
                    configuration: configuration,
                    database: database,
                    httpClient: httpClient,
                    registry: registry,
                    logger: logger
                )
            )
            built.application.addServices(HTTPClientService(client: httpClient))
            try await built.application.runService()
        } catch let error as ConfigurationError {
            try? await httpClient.shutdown()
            CommandSupport.fail(error)
        }
        await database.close()
    }
}
