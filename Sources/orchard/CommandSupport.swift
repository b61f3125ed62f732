import Accounts
import AppleID
import ArgumentParser
import AsyncHTTPClient
import Configuration
import Foundation
import Logging
import Metrics
import OrchardServer
import Prometheus
import Storage

/// What every command does first: read the configuration, set up logs and metrics.
enum CommandSupport {
    /// Loads the configuration, printing one line and exiting 2 when a setting is wrong.
    static func loadConfiguration(needs: OrchardConfiguration.Needs) async throws -> OrchardConfiguration {
        do {
            let reader = try await OrchardConfiguration.makeReader()
            return try OrchardConfiguration.load(from: reader, needs: needs)
        } catch {
            fail(error)
        }
    }

    /// Prints `orchard: SETTING: problem` to standard error and exits 2.
    static func fail(_ error: ConfigurationError) -> Never {
        FileHandle.standardError.write(Data("orchard: \(error)\n".utf8))
        exit(2)
    }

    /// Opens `ORCHARD_DATABASE_URL` (with `ORCHARD_DATABASE_LISTEN_URL` and `ORCHARD_DATABASE_POOLER` on PostgreSQL),
    /// printing one line and exiting 2 when it cannot be used.
    static func openDatabase(_ configuration: OrchardConfiguration, logger: Logger) async -> OpenedDatabase {
        do {
            return try await configuration.database.url.open(
                poolSize: configuration.database.poolSize,
                caFile: configuration.database.caFile,
                listenURL: configuration.database.listenURL,
                pooler: configuration.database.pooler,
                logger: logger
            )
        } catch {
            fail(ConfigurationError(setting: "ORCHARD_DATABASE_URL", problem: "\(error)"))
        }
    }

    /// Loads the configuration an operator command needs (the database and the vault, not Apple's settings), opens and
    /// migrates the database, and runs `body` with both while the database's services run, closing the database
    /// whatever happens. An ``AccountsError`` is printed as `orchard: CODE: reason` and exits 3 for `not_found`, 1
    /// otherwise; a configuration error exits 2.
    static func withDatabase<T>(
        label: String,
        _ body: (OrchardConfiguration, OpenedDatabase) async throws -> T
    ) async throws -> T {
        let configuration = try await loadConfiguration(needs: .vault)
        bootstrapLogging(level: configuration.logLevel)
        let logger = Logger(label: label)
        let database = await openDatabase(configuration, logger: logger)
        do {
            return try await database.whileRunning {
                try await Migrator(database: database.client, logger: logger).migrate()
                return try await body(configuration, database)
            }
        } catch let error as AccountsError {
            FileHandle.standardError.write(Data("orchard: \(error.code.rawValue): \(error.reason)\n".utf8))
            throw ExitCode(error.code == .notFound ? 3 : 1)
        }
    }

    /// ``withDatabase(label:_:)`` with the lifecycle over that database and the vault, for an operator command that
    /// does not call Apple.
    static func withOfflineLifecycle<T>(label: String, _ body: (Lifecycle) async throws -> T) async throws -> T {
        try await withDatabase(label: label) { configuration, database in
            try await body(
                Lifecycle(
                    store: database.store(logger: Logger(label: label)),
                    vault: TokenVault(keys: configuration.vaultKeys),
                    apple: OfflineAppleGateway(),
                    clock: SystemWallClock(),
                    configuration: configuration.accounts
                )
            )
        }
    }

    /// Loads the whole configuration (Apple's settings included), builds the lifecycle as `serve` does, and runs `body`
    /// with it while the database's services run, closing the HTTP client and the database whatever happens; a
    /// configuration error exits 2.
    static func withLifecycle<T: Sendable>(
        label: String,
        _ body: (Lifecycle, OrchardConfiguration, Logger) async throws -> T
    ) async throws -> T {
        let configuration = try await loadConfiguration(needs: .all)
        bootstrapLogging(level: configuration.logLevel)
        let logger = Logger(label: label)
        let database = await openDatabase(configuration, logger: logger)
        let http = HTTPClient.makeOrchardClient()
        do {
            let result = try await database.whileRunning {
                let (lifecycle, _) = try await buildLifecycle(
                    OrchardDependencies(
                        configuration: configuration,
                        database: database.client,
                        sessionBackend: database.sessionBackend,
                        httpClient: http,
                        registry: PrometheusCollectorRegistry(),
                        logger: logger
                    )
                )
                return try await body(lifecycle, configuration, logger)
            }
            try? await http.shutdown()
            return result
        } catch let error as ConfigurationError {
            try? await http.shutdown()
            fail(error)
        } catch {
            try? await http.shutdown()
            throw error
        }
    }

    /// Sends logs to standard error at `level`; `metadataProvider` adds metadata of the task's context to every line
    /// (`serve` adds the trace and span ids when it traces).
    static func bootstrapLogging(level: Logger.Level, metadataProvider: Logger.MetadataProvider? = nil) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label, metadataProvider: metadataProvider)
            handler.logLevel = level
            return handler
        }
    }

    /// Sends swift-metrics into a Prometheus registry, which `/metrics` serves.
    static func bootstrapMetrics() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }
}
