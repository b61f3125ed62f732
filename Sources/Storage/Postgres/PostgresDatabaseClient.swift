import Accounts
import AppleID
import Foundation
public import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresKit
import PostgresNIO
public import SQLKit
public import ServiceLifecycle
import Synchronization
import _ConnectionPoolModule

/// How `ORCHARD_DATABASE_URL` reaches PostgreSQL (`ORCHARD_DATABASE_POOLER`).
public enum DatabasePooler: String, Sendable {
    /// Directly, or through a session-pooling proxy: each connection keeps its named prepared statements.
    case none
    /// Through a transaction-pooling proxy (PgBouncer's `pool_mode=transaction`): no server-side state outlives a
    /// transaction, so every statement is sent unnamed (Parse, Bind, Execute each time).
    case transaction
}

/// PostgreSQL for several replicas: a pooled `PostgresClient`, whose run loop is a service (``service``) that the
/// process runs while it uses the database (`serve` in its service group; a command around its work).
///
/// Every call is bounded by a deadline, so a database outage answers `storage_unavailable` instead of hanging, and the
/// pool reconnects by itself when the server returns. ``withoutDeadline`` is the same pool without it, for migrations.
/// Copies share the pool. It knows nothing of sessions: the replicas' announcements run on connections of their own,
/// which ``sessionBackend`` opens to `ORCHARD_DATABASE_LISTEN_URL`.
public struct PostgresDatabaseClient: DatabaseClient, CustomStringConvertible {
    let client: PostgresClient
    private let logger: Logger
    /// How long one operation may take, waiting for a connection included (see ``bounded(_:)``); `nil` for none.
    let operationDeadline: Duration?
    /// Whether statements are prepared by name on their connection (not through a transaction-pooling proxy).
    let namesStatements: Bool
    /// Opens a connection for `LISTEN` (`application_name` `orchard-listener`).
    let connectListener: @Sendable () async throws -> PostgresConnection

    /// Always ``DatabaseFlavor/postgres``.
    public var flavor: DatabaseFlavor { .postgres }

    /// Its kind alone: its configuration holds the password.
    public var description: String { "PostgresDatabaseClient" }

    /// The same pool with no deadline: a migration building an index on a large table, or a replica waiting for another's
    /// migration lock, may rightly take longer than any request should.
    public var withoutDeadline: any DatabaseClient {
        PostgresDatabaseClient(
            client: client,
            logger: logger,
            operationDeadline: nil,
            namesStatements: namesStatements,
            connectListener: connectListener
        )
    }

    /// The pool's run loop: the pool serves only while it runs, and closes its connections when it is cancelled (at
    /// graceful shutdown, after every service that uses it).
    public var service: any Service { PoolService(client: client) }

    /// What the replicas' session protocol needs of this database: connections of their own for `LISTEN`.
    public var sessionBackend: SessionBackend { .replicas(ListenerConnections(connect: connectListener)) }

    /// Connects a pool to `url` (`postgres://USER:PASS@HOST:PORT/DB?sslmode=disable|prefer|require`).
    ///
    /// - Parameters:
    ///   - listenURL: Where the listener connects (`ORCHARD_DATABASE_LISTEN_URL`; default `url`).
    ///   - poolSize: connections at most (`ORCHARD_DATABASE_POOL_SIZE`).
    ///   - caFile: CA certificates that verify the server's certificate (`ORCHARD_DATABASE_CA_FILE`).
    ///   - pooler: Whether `url` goes through a transaction-pooling proxy (`ORCHARD_DATABASE_POOLER`).
    ///   - operationDeadline: how long one operation may take before it fails as unavailable.
    /// - Throws: ``Accounts/StoreError`` for a URL or CA file that cannot be used.
    public static func open(
        url: String,
        listenURL: String? = nil,
        poolSize: Int,
        caFile: String?,
        pooler: DatabasePooler = .none,
        operationDeadline: Duration = .seconds(10),
        logger: Logger
    ) throws -> PostgresDatabaseClient {
        // PostgresNIO logs every backend message at trace level (data rows included), and postgres-kit logs each
        // query's bound values at debug: whatever ORCHARD_LOG_LEVEL says, the driver logs at info and above only, and
        // queries are not logged at all (the contract's "Logs": a log outlives a deletion).
        var quieter = logger
        quieter.logLevel = max(logger.logLevel, .info)
        let driverLogger = quieter
        let pool = try Endpoint(url, setting: "ORCHARD_DATABASE_URL", caFile: caFile)
        var configuration = PostgresClient.Configuration(
            host: pool.host,
            port: pool.port,
            username: pool.username,
            password: pool.password,
            database: pool.database,
            tls: pool.poolTLS
        )
        configuration.options.maximumConnections = poolSize
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.additionalStartupParameters = [("application_name", "orchard")]
        // The listener's connection, one more than the pool.
        let listen = try listenURL.map { try Endpoint($0, setting: "ORCHARD_DATABASE_LISTEN_URL", caFile: caFile) } ?? pool
        var listener = PostgresConnection.Configuration(
            host: listen.host,
            port: listen.port,
            username: listen.username,
            password: listen.password,
            database: listen.database,
            tls: listen.connectionTLS
        )
        listener.options.connectTimeout = .seconds(3)
        listener.options.additionalStartupParameters = [("application_name", "orchard-listener")]
        let listenerConfiguration = listener
        return PostgresDatabaseClient(
            client: PostgresClient(configuration: configuration, backgroundLogger: driverLogger),
            logger: logger,
            operationDeadline: operationDeadline,
            namesStatements: pooler == .none,
            connectListener: {
                try await PostgresConnection.connect(
                    on: MultiThreadedEventLoopGroup.singleton.any(),
                    configuration: listenerConfiguration,
                    id: 0,
                    logger: driverLogger
                ).get()
            }
        )
    }

    /// Where a URL leads: host, port, credentials, database and TLS.
    private struct Endpoint {
        var host: String
        var port: Int
        var username: String
        var password: String?
        var database: String?
        var poolTLS: PostgresClient.Configuration.TLS
        var connectionTLS: PostgresConnection.Configuration.TLS

        init(_ url: String, setting: String, caFile: String?) throws {
            guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else {
                throw StoreError.unavailable("\(setting) is not a postgres://USER:PASS@HOST:PORT/DB URL")
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
            do {
                switch mode {
                case "disable", "false", "off":
                    (poolTLS, connectionTLS) = (.disable, .disable)
                case "require", "verify-ca", "verify-full", "true", "on":
                    (poolTLS, connectionTLS) = (.require(tlsConfiguration), .require(try NIOSSLContext(configuration: tlsConfiguration)))
                default:
                    (poolTLS, connectionTLS) = (.prefer(tlsConfiguration), .prefer(try NIOSSLContext(configuration: tlsConfiguration)))
                }
            } catch {
                throw StoreError.unavailable("PostgreSQL's TLS settings cannot be used: \(error)")
            }
            let database = String(components.path.drop { $0 == "/" })
            self.host = host
            self.port = components.port ?? 5432
            self.username = components.user?.removingPercentEncoding ?? "postgres"
            self.password = components.password?.removingPercentEncoding
            self.database = database.isEmpty ? nil : database
        }
    }

    /// The rows of a `SELECT`, on a pooled connection under the deadline.
    public func read(_ query: SQLQueryString) async throws -> [any SQLRow] {
        try await withDatabase { try await $0.raw(query).all() }
    }

    /// Runs `body` on a pooled connection. Without a deadline, it runs in a transaction of its own, so that it too lifts
    /// the `statement_timeout` a role may set (see ``transaction(_:)``).
    public func withDatabase<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        if operationDeadline == nil { return try await transaction(body) }
        // `body` escapes: past the deadline `bounded` answers while a lease or query that ignored its cancellation runs on.
        return try await bounded { connection in
            try await body(PreparedSQLDatabase(connection: connection, namesStatements: namesStatements))
        }
    }

    /// Runs `body` in one transaction on one pooled connection. Without a deadline, the transaction also lifts any
    /// `statement_timeout` the server sets for Orchard's role, which is meant for requests, not migrations.
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        let unbounded = operationDeadline == nil
        // PostgreSQL aborts one of two transactions that wait on each other's row locks (a deadlock, 40P01), or a
        // serialization failure (40001), and asks for the transaction to be run again: it is, up to three times,
        // after a few random milliseconds; past that the conflict is answered as the database being unavailable
        // (503, try again), never as a fault (500).
        var attempt = 1
        while true {
            do {
                return try await bounded { connection in
                    try await PreparedSQLDatabase(connection: connection, namesStatements: namesStatements).inTransaction(begin: "BEGIN") { db in
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

    /// A deadlock (40P01) or a serialization failure (40001): PostgreSQL rolled the transaction back, and running it
    /// again may succeed.
    static func isConflict(_ error: PSQLError) -> Bool {
        guard case .server = error.code, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "40P01" || state == "40001"
    }

    /// Nothing to do at once: PostgreSQL keeps deleted rows until vacuum and old pages in its WAL (see docs/deletion.md).
    public func purgeDeletedData() async throws {}

    /// Nothing: the pool closes its connections when its ``service`` is cancelled.
    public func close() async {}
}

/// A pool's run loop as a service: it runs until graceful shutdown reaches it (after the services that use the pool,
/// which stop before it), then the pool closes its connections.
private struct PoolService: Service, CustomStringConvertible {
    let client: PostgresClient

    var description: String { "PostgresPool" }

    /// The client's own run loop, which already ends at graceful shutdown; called directly, so that the loop is running
    /// as soon as this is entered (PostgresNIO warns of a lease taken before).
    func run() async throws {
        await client.run()
    }
}
