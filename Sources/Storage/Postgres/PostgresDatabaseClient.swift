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
    /// Half the time an operation may take (see ``bounded(_:)``); `nil` for none.
    private let deadline: Duration?

    /// Always ``DatabaseFlavor/postgres``.
    public var flavor: DatabaseFlavor { .postgres }

    private init(client: PostgresClient, runner: Task<Void, Never>, logger: Logger, deadline: Duration?) {
        self.client = client
        self.runner = runner
        self.logger = logger
        self.deadline = deadline
    }

    /// The same pool with no deadline: a migration building an index on a large table, or a replica waiting for another's
    /// migration lock, may rightly take longer than any request should. Closing either closes the pool.
    public var withoutDeadline: any DatabaseClient {
        PostgresDatabaseClient(client: client, runner: runner, logger: logger, deadline: nil)
    }

    /// Connects a pool to `url` (`postgres://USER:PASS@HOST:PORT/DB?sslmode=disable|prefer|require`).
    ///
    /// - Parameters:
    ///   - poolSize: connections at most (`ORCHARD_DATABASE_POOL_SIZE`).
    ///   - caFile: CA certificates that verify the server's certificate (`ORCHARD_DATABASE_CA_FILE`).
    /// - Throws: ``Accounts/StoreError`` for a URL or CA file that cannot be used.
    public static func open(
        url: String,
        poolSize: Int,
        caFile: String?,
        deadline: Duration = .seconds(5),
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
        let tls: PostgresClient.Configuration.TLS =
            switch mode {
            case "disable", "false", "off": .disable
            case "require", "verify-ca", "verify-full", "true", "on": .require(tlsConfiguration)
            default: .prefer(tlsConfiguration)
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
        // PostgresNIO logs every backend message at trace level (data rows included), and postgres-kit logs each
        // query's bound values at debug: whatever ORCHARD_LOG_LEVEL says, the driver logs at info and above only, and
        // queries are not logged at all (the contract's "Logs": a log outlives a deletion).
        var driverLogger = logger
        driverLogger.logLevel = max(logger.logLevel, .info)
        let client = PostgresClient(configuration: configuration, backgroundLogger: driverLogger)
        let runner = Task { await client.run() }
        return PostgresDatabaseClient(client: client, runner: runner, logger: logger, deadline: deadline)
    }

    /// Always `nil`: PostgreSQL answers over the network, so every read awaits ``withDatabase(_:)``.
    public func readNow(_ query: SQLQueryString) throws -> [any SQLRow]? {
        nil
    }

    /// Runs `body` on a pooled connection.
    public func withDatabase<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        // `bounded` waits for its task before returning, so `body` does not really escape.
        try await withoutActuallyEscaping(body) { body in
            try await bounded { connection in
                try await body(connection.sql(queryLogLevel: nil))
            }
        }
    }

    /// Runs `body` in one transaction on one pooled connection.
    public func transaction<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await withoutActuallyEscaping(body) { body in
            try await bounded { connection in
                try await connection.sql(queryLogLevel: nil).inTransaction(begin: "BEGIN", body)
            }
        }
    }

    /// Nothing to do at once: PostgreSQL keeps deleted rows until vacuum and old pages in its WAL (see docs/deletion.md).
    public func purgeDeletedData() async throws {}

    /// Stops the pool.
    public func close() async {
        runner.cancel()
        await runner.value
    }

    /// Runs `work` on a pooled connection within twice the deadline, mapping connection failures to
    /// ``Accounts/StoreError/unavailable(_:)``.
    ///
    /// The work runs in a task of its own that a timer on an event loop cancels at the deadline, so the caller's task is
    /// never cancelled and can still answer. A waiting lease ends on cancellation; a query already sent does not (a
    /// server that stopped answering would hold the request for good), so the timer also closes the connection it runs
    /// on, which fails the query at once; the pool opens another. A task group racing the work against `Task.sleep` did
    /// the same at several times the cost: two child tasks per statement, and a dispatch timer left pending for the whole
    /// deadline after every one.
    private func bounded<T: Sendable>(_ work: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let client = self.client
        guard let deadline else {
            return try await Self.mappingUnavailability(expired: { false }, { try await client.withConnection(work) })
        }
        let expired = Atomic<Bool>(false)
        let leased = Mutex<PostgresConnection?>(nil)
        let task = Task {
            try await client.withConnection { connection in
                leased.withLock { $0 = connection }
                defer { leased.withLock { $0 = nil } }
                do {
                    return try await work(connection)
                } catch  where expired.load(ordering: .relaxed) {
                    // Handed back to the pool only once closed, so that the pool has dropped it: handed back while
                    // closing, it went to the next request, which then failed on it.
                    try? await connection.closeFuture.get()
                    throw error
                }
            }
        }
        let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: (deadline * 2).timeAmount) {
            expired.store(true, ordering: .relaxed)
            task.cancel()
            let connection = leased.withLock { $0 }
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
        return try await Self.mappingUnavailability(expired: { expired.load(ordering: .relaxed) }, awaited)
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
            throw StoreError.unavailable("PostgreSQL did not answer in time")
        } catch let error as PSQLError {
            if isUnavailability(error) {
                throw StoreError.unavailable("PostgreSQL: \(error.code)")
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
            // Class 08: connection exception; 57P0x: shutdown; 53xxx: insufficient resources.
            let state = error.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53")
        default:
            return true
        }
    }
}
