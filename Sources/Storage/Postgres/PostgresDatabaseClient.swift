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
/// Copies share the pool and its run task: closing any of them closes it.
public struct PostgresDatabaseClient: DatabaseClient {
    let client: PostgresClient
    private let runner: Task<Void, Never>
    private let logger: Logger
    /// How long one operation may take, waiting for a connection included (see ``bounded(_:)``); `nil` for none.
    let operationDeadline: Duration?
    /// This process's part in the replicas' session protocol.
    let coherence: SessionCoherence

    /// Always ``DatabaseFlavor/postgres``.
    public var flavor: DatabaseFlavor { .postgres }

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
            // PostgreSQL aborts one of two transactions that wait on each other's row locks (a deadlock, 40P01), or a
            // serialization failure (40001), and asks for the transaction to be run again: it is, up to three times,
            // after a few random milliseconds; past that the conflict is answered as the database being unavailable
            // (503, try again), never as a fault (500).
            var attempt = 1
            while true {
                do {
                    return try await bounded { connection in
                        try await PreparedSQLDatabase(connection: connection).inTransaction(begin: "BEGIN") { db in
                            if unbounded { try await db.raw("SET LOCAL statement_timeout = 0").run() }
                            return try await body(db)
                        }
                    }
                } catch let error as PSQLError where Self.isConflict(error) {
                    guard attempt < 3 else {
                        throw StoreError.unavailable(
                            "PostgreSQL: concurrent transactions conflicted three times (\(error.serverInfo?[.sqlState] ?? ""))"
                        )
                    }
                    attempt += 1
                    try await Task.sleep(for: .milliseconds(Int.random(in: 5...50)))
                }
            }
        }
    }

    /// A deadlock (40P01) or a serialization failure (40001): PostgreSQL rolled the transaction back, and running it
    /// again may succeed.
    static func isConflict(_ error: PSQLError) -> Bool {
        guard case .server = error.code, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "40P01" || state == "40001"
    }

    /// Nothing to do at once: PostgreSQL keeps deleted rows until vacuum and old pages in its WAL (see docs/deletion.md).
    public func purgeDeletedData() async throws {}

    /// The session from this replica's memory when it may answer for it (docs/replicas-postgresql.md), else from `read`
    /// with the checks that arrive while others read (``SessionReads``).
    public func session(
        tokenHash: String,
        mayRemember: Bool,
        read: ([String]) async throws -> [SessionWithAccount]
    ) async throws -> SessionWithAccount? {
        try await coherence.session(tokenHash: tokenHash, mayRemember: mayRemember, read: read)
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
}
