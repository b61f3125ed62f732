import Accounts
public import Logging
import NIOCore
import NIOPosix
public import SQLKit
import SQLiteKit
import SQLiteNIO

/// The embedded SQLite database: one connection, one writer, set up as Orchard needs it.
///
/// The connection replaces sqlite-nio's retry-forever busy handler with a `busy_timeout`, runs in WAL mode with
/// `synchronous=FULL` (nothing acknowledged is lost on a crash), and turns `secure_delete` on so deleted values are
/// overwritten in the file. Every statement and transaction holds the one connection through an ``AsyncLock``.
public final class SQLiteDatabaseClient: DatabaseClient {
    private let connection: SQLiteConnection
    private let lock = AsyncLock()
    private let logger: Logger
    /// The database file's path.
    public let path: String

    /// Always ``DatabaseFlavor/sqlite``.
    public var flavor: DatabaseFlavor { .sqlite }

    private init(connection: SQLiteConnection, path: String, logger: Logger) {
        self.connection = connection
        self.path = path
        self.logger = logger
    }

    /// Opens (creating when missing) the database file at `path`.
    public static func open(path: String, logger: Logger) async throws -> SQLiteDatabaseClient {
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(
                storage: .file(path: path),
                threadPool: NIOThreadPool.singleton,
                logger: logger,
                on: MultiThreadedEventLoopGroup.singleton.any()
            )
        } catch {
            throw StoreError.unavailable("cannot open the SQLite database at \(path): \(error)")
        }
        do {
            for pragma in [
                "PRAGMA busy_timeout = 5000", "PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL",
                "PRAGMA secure_delete = ON", "PRAGMA foreign_keys = ON",
            ] {
                _ = try await connection.query(pragma)
            }
        } catch {
            try? await connection.close()
            throw StoreError.unavailable("cannot configure the SQLite database at \(path): \(error)")
        }
        return SQLiteDatabaseClient(connection: connection, path: path, logger: logger)
    }

    /// Runs `body` on the connection.
    public func withDatabase<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        let database = connection.sql()
        return try await lock.withLock {
            try await Self.mappingErrors { try await body(database) }
        }
    }

    /// Runs `body` in an immediate transaction (the write lock is taken at `BEGIN`, so it never fails half-way).
    public func transaction<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        let database = connection.sql()
        return try await lock.withLock {
            try await Self.mappingErrors {
                try await database.inTransaction(begin: "BEGIN IMMEDIATE", body)
            }
        }
    }

    /// Copies the WAL into the main file and empties it, so nothing deleted lingers in the WAL.
    public func checkpoint() async throws {
        try await withDatabase { try await $0.raw("PRAGMA wal_checkpoint(TRUNCATE)").run() }
    }

    /// Checkpoints: with `secure_delete` the freed pages are already zeroed in the main file, and the WAL that still
    /// held the deleted rows is emptied.
    public func purgeDeletedData() async throws {
        try await checkpoint()
    }

    /// Closes the connection.
    public func close() async {
        do {
            try await connection.close()
        } catch {
            logger.warning("closing the SQLite database failed", metadata: ["error": "\(error)"])
        }
    }

    private static func mappingErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as StoreError {
            throw error
        } catch let error as SQLiteError where Self.isUnavailability(error) {
            throw StoreError.unavailable("SQLite: \(error.message)")
        }
    }

    /// Whether an error means the database cannot work right now (locked, full, unreadable), rather than a bug.
    private static func isUnavailability(_ error: SQLiteError) -> Bool {
        switch error.reason {
        case .busy, .locked, .busyTimeout, .busyInRecovery, .busyInSnapshot, .ioError, .full, .cantOpen, .readOnly, .noMemory,
            .corrupt, .notADatabase, .interrupt:
            true
        default:
            String(describing: error.reason).hasPrefix("ioError") || String(describing: error.reason).hasPrefix("readonly")
        }
    }
}
