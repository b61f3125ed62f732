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

    /// Opens `ORCHARD_DATABASE_URL`, printing one line and exiting 2 when it cannot be used. Only `serve` answers
    /// session checks from memory (`answering`); the commands announce the sessions they end.
    static func openDatabase(
        _ configuration: OrchardConfiguration,
        answering: Bool = false,
        logger: Logger
    ) async -> any DatabaseClient {
        do {
            return try await configuration.database.url.open(
                poolSize: configuration.database.poolSize,
                caFile: configuration.database.caFile,
                sessionCache: answering && configuration.database.sessionCache ? .answering : .announcing,
                logger: logger
            )
        } catch {
            fail(ConfigurationError(setting: "ORCHARD_DATABASE_URL", problem: "\(error)"))
        }
    }

    /// Loads the configuration an operator command needs (the database and the vault, not Apple's settings), opens and
    /// migrates the database, and runs `body` with both, closing the database whatever happens. An ``AccountsError``
    /// is printed as `orchard: CODE: reason` and exits 3 for `not_found`, 1 otherwise; a configuration error exits 2.
    static func withDatabase<T>(
        label: String,
        _ body: (OrchardConfiguration, any DatabaseClient) async throws -> T
    ) async throws -> T {
        let configuration = try await loadConfiguration(needs: .vault)
        bootstrapLogging(level: configuration.logLevel)
        let logger = Logger(label: label)
        let database = await openDatabase(configuration, logger: logger)
        do {
            try await Migrator(database: database, logger: logger).migrate()
            let result = try await body(configuration, database)
            await database.close()
            return result
        } catch let error as AccountsError {
            await database.close()
            FileHandle.standardError.write(Data("orchard: \(error.code.rawValue): \(error.reason)\n".utf8))
            throw ExitCode(error.code == .notFound ? 3 : 1)
        } catch {
            await database.close()
            throw error
        }
    }

    /// ``withDatabase(label:_:)`` with the lifecycle over that database and the vault, for an operator command that
    /// does not call Apple.
    static func withOfflineLifecycle<T>(label: String, _ body: (Lifecycle) async throws -> T) async throws -> T {
        try await withDatabase(label: label) { configuration, database in
            try await body(
                Lifecycle(
                    store: SQLAccountStore(database: database),
                    vault: TokenVault(keys: configuration.vaultKeys),
                    apple: OfflineAppleGateway(),
                    clock: SystemWallClock(),
                    configuration: configuration.accounts
                )
            )
        }
    }

    /// Loads the whole configuration (Apple's settings included), builds the lifecycle as `serve` does, and runs `body`
    /// with it, closing the HTTP client and the database whatever happens; a configuration error exits 2.
    static func withLifecycle<T: Sendable>(
        label: String,
        _ body: (Lifecycle, OrchardConfiguration, Logger) async throws -> T
    ) async throws -> T {
        let configuration = try await loadConfiguration(needs: .all)
        bootstrapLogging(level: configuration.logLevel)
        let logger = Logger(label: label)
        let database = await openDatabase(configuration, logger: logger)
        let http = HTTPClient.makeOrchardClient()
        func close() async {
            try? await http.shutdown()
            await database.close()
        }
        do {
            let (lifecycle, _) = try await buildLifecycle(
                OrchardDependencies(
                    configuration: configuration,
                    database: database,
                    httpClient: http,
                    registry: PrometheusCollectorRegistry(),
                    logger: logger
                )
            )
            let result = try await body(lifecycle, configuration, logger)
            await close()
            return result
        } catch let error as ConfigurationError {
            await close()
            fail(error)
        } catch {
            await close()
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
