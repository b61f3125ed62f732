import ArgumentParser
import Logging
import OrchardServer
import Storage

/// `orchard migrate`.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Create or upgrade the database schema (ORCHARD_DATABASE_URL) and exit."
    )

    func run() async throws {
        let configuration = try await CommandSupport.loadConfiguration(needs: [])
        CommandSupport.bootstrapLogging(level: configuration.logLevel)
        let logger = Logger(label: "orchard.migrate")
        let database = await CommandSupport.openDatabase(configuration, logger: logger)
        let (applied, version) = try await database.whileRunning {
            let migrator = Migrator(database: database.client, logger: logger)
            return (try await migrator.migrate(), try await migrator.currentVersion())
        }
        print(
            applied.isEmpty
                ? "schema is up to date (version \(version))"
                : "applied \(applied.map(String.init).joined(separator: ", ")); schema version \(version)"
        )
    }
}
