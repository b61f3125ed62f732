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
/// pool reconnects by itself when the server returns.
public final class PostgresDatabaseClient: DatabaseClient {
    private let client: PostgresClient
    private let runner: Task<Void, Never>
    private let logger: Logger
    private let deadline: Duration

    /// Always ``DatabaseFlavor/postgres``.
    public var flavor: DatabaseFlavor { .postgres }

    private init(client: PostgresClient, runner: Task<Void, Never>, logger: Logger, deadline: Duration) {
        self.client = client
        self.runner = runner
        self.logger = logger
        self.deadline = deadline
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
            try await bounded {
                try await self.client.withConnection { connection in
                    try await body(connection.sql(queryLogLevel: nil))
                }
            }
        }
    }

    /// Runs `body` in one transaction on one pooled connection.
    public func transaction<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await withoutActuallyEscaping(body) { body in
            try await bounded {
                try await self.client.withConnection { connection in
                    try await connection.sql(queryLogLevel: nil).inTransaction(begin: "BEGIN", body)
                }
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

    /// Runs `work` within the deadline, mapping connection failures to ``Accounts/StoreError/unavailable(_:)``.
    private func bounded<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        // The work runs in a task of its own that a timer on an event loop cancels at the deadline (a waiting lease
        // and a running query both end on cancellation), so the caller's task is never cancelled and can still answer.
        // A task group racing the work against `Task.sleep` did the same at several times the cost: two child tasks
        // per statement, and a dispatch timer left pending for the whole deadline after every one.
        let expired = Atomic<Bool>(false)
        let task = Task { try await work() }
        let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: (deadline * 2).timeAmount) {
            expired.store(true, ordering: .relaxed)
            task.cancel()
        }
        defer { timer.cancel() }
        do {
            return try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        } catch let error as StoreError {
            throw error
        } catch  where expired.load(ordering: .relaxed) {
            throw StoreError.unavailable("PostgreSQL did not answer in time")
        } catch let error as PSQLError {
            if Self.isUnavailability(error) {
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
