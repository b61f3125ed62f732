import ArgumentParser
import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
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
            and claimed jobs finish for up to ORCHARD_SHUTDOWN_GRACE seconds (default 10), then exits 0: at most 5 seconds \
            later even when some work cannot be cancelled (a query to a database that stopped answering). \
            With OTEL_EXPORTER_OTLP_ENDPOINT set, it exports traces (a span per request, per call to Apple, per job) \
            over OTLP/HTTP, configured by the OpenTelemetry environment variables, and logs carry trace_id and span_id.
            """
    )

    func run() async throws {
        // Swift concurrency runs on NIO's event loops, the threads that already read and write the sockets: a request's
        // handler then runs where its bytes arrived, instead of two thread hand-offs per request (event loop → the
        // concurrency pool → event loop); `Benchmarks/run`'s `GET /v1/session` guards this. Nothing in serve blocks a
        // thread for long: SQLite reads are microseconds, and commits (the fsync) run on the writer's own queue.
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        let configuration = try await CommandSupport.loadConfiguration(needs: .all)
        let environment = ProcessInfo.processInfo.environment
        let traces = ServeTracing.isEnabled(environment)
        CommandSupport.bootstrapLogging(
            level: configuration.logLevel,
            metadataProvider: traces ? ServeTracing.logMetadataProvider : nil
        )
        var tracing: (any Service)?
        if traces {
            do {
                tracing = try ServeTracing.bootstrap(environment: environment)
            } catch {
                CommandSupport.fail(error)
            }
        }
        let registry = CommandSupport.bootstrapMetrics()
        let logger = Logger(label: "orchard")
        let database = await CommandSupport.openDatabase(configuration, logger: logger)
        let httpClient = HTTPClient.makeOrchardClient()
        do {
            var dependencies = OrchardDependencies(
                configuration: configuration,
                database: database.client,
                sessionBackend: database.sessionBackend,
                httpClient: httpClient,
                registry: registry,
                logger: logger
            )
            dependencies.tracesRequests = tracing != nil
            dependencies.answersSessionChecks = configuration.database.sessionCache
            // Shut down in reverse order: the application first (the server stops accepting and lets open requests
            // finish; the job loops stop claiming and let claimed jobs record their outcomes; the session memory's
            // services stop after them, since buildApplication adds them first), then the HTTP client those jobs use to
            // reach Apple and the receivers, then the database's pool, and last the span exporter, which flushes what
            // they traced. Past ORCHARD_SHUTDOWN_GRACE, what is left is cancelled (and its jobs are taken over when
            // their leases end). The application migrates the database as it starts, with the pool's service already
            // running.
            // Each service is named here: the group logs the names, and a default description reaches what a service
            // holds (the OTLP exporter's headers may carry a credential).
            // Each runs in the roster too, so that a shutdown past its limit names what is still running.
            let roster = dependencies.roster
            func named(_ service: any Service, _ name: String) -> ServiceGroupConfiguration.ServiceConfiguration {
                .init(service: roster.track(service, as: name), serviceName: name)
            }
            var services = database.services.map { named($0, "DatabasePool") }
            services += [
                named(HTTPClientService(client: httpClient), "HTTPClientService"),
                named(OrchardService(dependencies: dependencies), "OrchardService"),
            ]
            if let tracing { services.insert(named(tracing, "OTelTracing"), at: 0) }
            // Last, so that a signal reaches it first (the group shuts its services down in reverse order).
            let signal = ShutdownSignal()
            services.append(
                .init(
                    service: ShutdownDeadline(
                        grace: configuration.listener.shutdownGrace,
                        logger: logger,
                        signal: signal,
                        roster: roster
                    ),
                    successTerminationBehavior: .ignore,
                    serviceName: "ShutdownDeadline"
                )
            )
            var group = ServiceGroupConfiguration(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
            group.maximumGracefulShutdownDuration = configuration.listener.shutdownGrace
            // A backstop for a group that ends without a signal (a service failed); after a signal, ShutdownDeadline
            // exits first, with the status the contract gives.
            group.maximumCancellationDuration = ShutdownDeadline.cancellation * 2
            do {
                try await ServiceGroup(configuration: group).run()
            } catch  where signal.hasCome {
                // Work cancelled past the grace may end its service with an error; serve still exits 0, as the
                // contract's shutdown says, and the log tells what ended so (its type: a description may hold a URL).
                logger.error(
                    "a service ended with an error while serve shut down; exiting 0 as after every SIGTERM or SIGINT",
                    metadata: ["error.type": "\(type(of: error))"]
                )
            }
        } catch let error as ConfigurationError {
            try? await httpClient.shutdown()
            CommandSupport.fail(error)
        }
        await database.client.close()
    }
}
