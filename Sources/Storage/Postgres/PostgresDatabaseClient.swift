public import Accounts
import AppleID
import Foundation
public import Logging
public import Metrics
import NIOCore
import NIOPosix
import NIOSSL
import PostgresKit
import PostgresNIO
public import SQLKit
import Synchronization
import _ConnectionPoolModule

/// PostgreSQL for several replicas: a pooled `PostgresClient` whose background run task this client owns.
///
/// Every call is bounded by a deadline, so a database outage answers `storage_unavailable` instead of hanging, and the
/// pool reconnects by itself when the server returns. ``withoutDeadline`` is the same pool without it, for migrations.
public final class PostgresDatabaseClient: DatabaseClient {
    private let client: PostgresClient
    private let runner: Task<Void, Never>
    private let logger: Logger
    /// How long one operation may take, waiting for a connection included (see ``bounded(_:)``); `nil` for none.
    private let operationDeadline: Duration?
    /// This process's part in the replicas' session protocol.
    let coherence: SessionCoherence

    /// Always ``DatabaseFlavor/postgres``.
    public var flavor: DatabaseFlavor { .postgres }

    private init(
        client: PostgresClient,
        runner: Task<Void, Never>,
        logger: Logger,
        operationDeadline: Duration?,
        coherence: SessionCoherence
    ) {
        self.coherence = coherence
        self.client = client
        self.runner = runner
        self.logger = logger
        self.operationDeadline = operationDeadline
    }

    /// The same pool with no deadline: a migration building an index on a large table, or a replica waiting for another's
    /// migration lock, may rightly take longer than any request should. Closing either closes the pool.
    public var withoutDeadline: any DatabaseClient {
        PostgresDatabaseClient(client: client, runner: runner, logger: logger, operationDeadline: nil, coherence: coherence)
    }

    /// Connects a pool to `url` (`postgres://USER:PASS@HOST:PORT/DB?sslmode=disable|prefer|require`).
    ///
    /// - Parameters:
    ///   - poolSize: connections at most (`ORCHARD_DATABASE_POOL_SIZE`).
    ///   - caFile: CA certificates that verify the server's certificate (`ORCHARD_DATABASE_CA_FILE`).
    ///   - operationDeadline: how long one operation may take before it fails as unavailable.
    ///   - sessionCache: this process's part in the replicas' session protocol (`ORCHARD_SESSION_CACHE`).
    ///   - metrics: where the session memory's metrics go.
    /// - Throws: ``Accounts/StoreError`` for a URL or CA file that cannot be used.
    public static func open(
        url: String,
        poolSize: Int,
        caFile: String?,
        operationDeadline: Duration = .seconds(10),
        sessionCache: SessionCacheRole = .announcing,
        metrics: any MetricsFactory = MetricsSystem.factory,
        logger: Logger
    ) throws -> PostgresDatabaseClient {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else {
            throw StoreError.unavailable("ORCHARD_DATABASE_URL is not a postgres://USER:PASS@HOST:PORT/DB URL")
        }
        let mode = components.queryItems?.last { ["sslmode", "tlsmode", "ssl", "tls"].contains($0.name.lowercased()) }?.value?.lowercased()
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            do {
                tlsConfiguration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
            } catch {
                throw StoreError.unavailable("ORCHARD_DATABASE_CA_FILE \(caFile) is not a PEM certificate file")
            }
        }
        let tls: PostgresClient.Configuration.TLS
        let listenerTLS: PostgresConnection.Configuration.TLS
        do {
            switch mode {
            case "disable", "false", "off":
                (tls, listenerTLS) = (.disable, .disable)
            case "require", "verify-ca", "verify-full", "true", "on":
                (tls, listenerTLS) = (.require(tlsConfiguration), .require(try NIOSSLContext(configuration: tlsConfiguration)))
            default:
                (tls, listenerTLS) = (.prefer(tlsConfiguration), .prefer(try NIOSSLContext(configuration: tlsConfiguration)))
            }
        } catch {
            throw StoreError.unavailable("PostgreSQL's TLS settings cannot be used: \(error)")
        }
        let database = String(components.path.drop { $0 == "/" })
        var configuration = PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: components.user?.removingPercentEncoding ?? "postgres",
            password: components.password?.removingPercentEncoding,
            database: database.isEmpty ? nil : database,
            tls: tls
        )
        configuration.options.maximumConnections = poolSize
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.additionalStartupParameters = [("application_name", "orchard")]
        // The listener's connection, one more than the pool.
        var listener = PostgresConnection.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: configuration.username,
            password: configuration.password,
            database: configuration.database,
            tls: listenerTLS
        )
        listener.options.connectTimeout = .seconds(3)
        listener.options.additionalStartupParameters = [("application_name", "orchard-listener")]
        // PostgresNIO logs every backend message at trace level (data rows included), and postgres-kit logs each
        // query's bound values at debug: whatever ORCHARD_LOG_LEVEL says, the driver logs at info and above only, and
        // queries are not logged at all (the contract's "Logs": a log outlives a deletion).
        var driverLogger = logger
        driverLogger.logLevel = max(logger.logLevel, .info)
        let client = PostgresClient(configuration: configuration, backgroundLogger: driverLogger)
        let runner = Task { await client.run() }
        let listenerConfiguration = listener
        let listenerLogger = driverLogger
        let coherence = SessionCoherence(
            role: sessionCache,
            connect: {
                try await PostgresConnection.connect(
                    on: MultiThreadedEventLoopGroup.singleton.any(),
                    configuration: listenerConfiguration,
                    id: 0,
                    logger: listenerLogger
                ).get()
            },
            metrics: metrics,
            logger: logger
        )
        return PostgresDatabaseClient(
            client: client,
            runner: runner,
            logger: logger,
            operationDeadline: operationDeadline,
            coherence: coherence
        )
    }

    /// The rows of a `SELECT`, on a pooled connection under the deadline.
    public func read(_ query: SQLQueryString) async throws -> [any SQLRow] {
        try await withDatabase { try await $0.raw(query).all() }
    }

    /// Runs `body` on a pooled connection. Without a deadline, it runs in a transaction of its own, so that it too lifts
    /// the `statement_timeout` a role may set (see ``transaction(_:)``).
    public func withDatabase<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        if operationDeadline == nil { return try await transaction(body) }
        // `bounded` waits for its task before returning, so `body` does not really escape.
        return try await withoutActuallyEscaping(body) { body in
            try await bounded { connection in
                try await body(PreparedSQLDatabase(connection: connection))
            }
        }
    }

    /// Runs `body` in one transaction on one pooled connection. Without a deadline, the transaction also lifts any
    /// `statement_timeout` the server sets for Orchard's role, which is meant for requests, not migrations.
    public func transaction<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        let unbounded = operationDeadline == nil
        return try await withoutActuallyEscaping(body) { body in
            try await bounded { connection in
                try await PreparedSQLDatabase(connection: connection).inTransaction(begin: "BEGIN") { db in
                    if unbounded { try await db.raw("SET LOCAL statement_timeout = 0").run() }
                    return try await body(db)
                }
            }
        }
    }

    /// Nothing to do at once: PostgreSQL keeps deleted rows until vacuum and old pages in its WAL (see docs/deletion.md).
    public func purgeDeletedData() async throws {}

    /// The session from this replica's memory when it may answer for it (docs/replicas-postgresql.md), else from `read`.
    public func session(
        tokenHash: String,
        mayRemember: Bool,
        read: () async throws -> SessionWithAccount?
    ) async throws -> SessionWithAccount? {
        guard mayRemember else { return try await read() }
        return try await coherence.session(tokenHash: tokenHash, read: read)
    }

    /// Runs `change` once every replica that answers from memory has stopped answering for `target`'s sessions, and
    /// tells them its outcome.
    public func endingSessions<T: Sendable>(
        _ target: SessionEndTarget,
        _ change: @escaping @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        try await coherence.ending(target, announce: { try await self.read($0) }, transaction: { try await self.transaction($0) }, change)
    }

    /// This replica forgets the account's sessions.
    public func changed(account accountID: String) {
        coherence.changed(account: accountID)
    }

    /// Stops the listener and the pool.
    public func close() async {
        await coherence.stop()
        runner.cancel()
        await runner.value
    }

    /// Runs `work` on a pooled connection within the operation deadline, mapping connection failures to
    /// ``Accounts/StoreError/unavailable(_:)``.
    ///
    /// The work runs in a task of its own that a timer on an event loop cancels at the deadline, so the caller's task is
    /// never cancelled and can still answer. A waiting lease ends on cancellation; a query already sent does not (a
    /// server that stopped answering would hold the request for good), so the timer also closes the connection it runs
    /// on, which fails the query; the pool opens another. One lock orders the lease, the timer and the release (see
    /// ``Attempt``). Not a task group racing the work against `Task.sleep`: that makes two child tasks per statement
    /// and leaves a dispatch timer pending for the whole deadline after every one. `Benchmarks/run`'s PostgreSQL
    /// figures guard this.
    private func bounded<T: Sendable>(_ work: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let client = self.client
        guard let operationDeadline else {
            return try await Self.mappingUnavailability(expired: { false }, { try await client.withConnection(work) })
        }
        let attempt = Mutex(Attempt.waiting)
        let task = Task {
            try await client.withConnection { connection in
                let granted = attempt.withLock { state in
                    guard case .waiting = state else { return false }
                    state = .leased(connection)
                    return true
                }
                // A lease granted after the deadline: the work is not started on it.
                guard granted else { throw Self.timedOut }
                let result: Result<T, any Error>
                do {
                    result = .success(try await work(connection))
                } catch {
                    result = .failure(error)
                }
                let closing = attempt.withLock { state in
                    guard case .closing = state else {
                        state = .released
                        return false
                    }
                    return true
                }
                // Handed back to the pool only once closed, so that the pool has dropped it: handed back while closing,
                // it would go to the next request, which would fail on it. The same when the server closed it.
                var failed: Bool {
                    guard case .failure = result else { return false }
                    return true
                }
                if closing || (failed && connection.isClosed) { try? await connection.closeFuture.get() }
                return try result.get()
            }
        }
        let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: operationDeadline.timeAmount) {
            let connection = attempt.withLock { state -> PostgresConnection? in
                switch state {
                case .waiting:
                    state = .expired
                    return nil
                case .leased(let connection):
                    state = .closing(connection)
                    return connection
                case .expired, .closing, .released:
                    return nil
                }
            }
            task.cancel()
            // Still this attempt's: the task hands it back only after seeing `.closing`, and then only once closed.
            let closed: EventLoopFuture<Void>? = connection?.close()
            _ = closed
        }
        defer { timer.cancel() }
        let awaited: () async throws -> T = {
            try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        }
        return try await Self.mappingUnavailability(expired: { attempt.withLock { $0.isExpired } }, awaited)
    }

    /// What an operation past its deadline answers.
    private static let timedOut = StoreError.unavailable("PostgreSQL did not answer in time")

    /// Where one bounded operation stands, changed only under its lock: the lease, the timer and the release each move
    /// it on, so the timer closes a connection only while this operation holds it, and a lease granted after the
    /// deadline is not used.
    private enum Attempt: Sendable {
        /// Waiting for a lease.
        case waiting
        /// Working on a leased connection.
        case leased(PostgresConnection)
        /// The deadline passed before a lease.
        case expired
        /// The deadline passed during the work: the connection is being closed, and goes back to the pool once closed.
        case closing(PostgresConnection)
        /// Done, and the connection handed back.
        case released

        var isExpired: Bool {
            switch self {
            case .expired, .closing: true
            case .waiting, .leased, .released: false
            }
        }
    }

    /// `work`'s result, with the driver's outage errors, and any error once `expired()`, as
    /// ``Accounts/StoreError/unavailable(_:)``.
    private static func mappingUnavailability<T: Sendable>(
        expired: () -> Bool,
        _ work: () async throws -> T
    ) async throws -> T {
        do {
            return try await work()
        } catch let error as StoreError {
            throw error
        } catch  where expired() {
            throw timedOut
        } catch let error as PSQLError {
            if isUnavailability(error) {
                let state = error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                throw StoreError.unavailable("PostgreSQL: \(error.code)\(state)")
            }
            throw error
        } catch let error as _ConnectionPoolModule.ConnectionPoolError {
            // After failing to connect for a while, the pool's circuit breaker refuses requests at once: still an
            // outage (503), not a fault of Orchard's (500).
            throw StoreError.unavailable("PostgreSQL: the connection pool cannot connect (\(error))")
        }
    }

    private static func isUnavailability(_ error: PSQLError) -> Bool {
        switch error.code {
        case .server:
            // Class 08: connection exception; 57P0x: shutdown; 53xxx: insufficient resources; 57014: cancelled by the
            // server, as a `statement_timeout` set for Orchard's role does (docs/operations.md).
            let state = error.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53") || state == "57014"
        default:
            return true
        }
    }
}
