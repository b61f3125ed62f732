import Accounts
import Foundation
import GRDB
public import Logging
public import SQLKit

#if canImport(Glibc)
import Glibc
#endif

/// The embedded SQLite database, set up for concurrency: readers on their own connections, one writer that commits
/// concurrent transactions together.
///
/// It runs on GRDB's `DatabasePool` over the system's SQLite, in WAL mode with `synchronous=FULL` (nothing acknowledged
/// is lost on a crash), `secure_delete` on (deleted values are overwritten in the file), foreign keys on and a 5 s busy
/// timeout. A read (`SELECT`) runs on a reader connection directly on the calling thread and never waits for a write's
/// fsync. Writes and transactions go to ``SQLiteWriter``, which commits the transactions that arrive while a commit is in
/// flight as one group, and answers each caller only once its data is durable.
///
/// GRDB rather than sqlite-nio because sqlite-nio runs every statement on a blocking thread pool behind futures: three
/// thread hand-offs per statement. GRDB runs a statement on the calling thread and keeps prepared statements cached;
/// `Benchmarks/run`'s session check guards this. The SQL stays SQLKit's, the same for PostgreSQL.
public final class SQLiteDatabaseClient: DatabaseClient {
    private let pool: DatabasePool
    private let reader: SQLiteReader
    private let writer: SQLiteWriter
    private let watch: SQLiteChangeWatch
    private let checkpointer: SQLiteCheckpointer
    private let logger: Logger
    /// The database file's path.
    public let path: String

    /// How many commits the writer made, and how many transactions they held.
    public var commitStatistics: SQLiteCommitStatistics { writer.statistics }

    /// Always ``DatabaseFlavor/sqlite``.
    public var flavor: DatabaseFlavor { .sqlite }

    private init(
        pool: DatabasePool,
        reader: SQLiteReader,
        watch: SQLiteChangeWatch,
        checkpointer: SQLiteCheckpointer,
        path: String,
        logger: Logger
    ) {
        self.pool = pool
        self.reader = reader
        self.watch = watch
        self.checkpointer = checkpointer
        self.writer = SQLiteWriter.start(pool: pool, logger: logger)
        self.path = path
        self.logger = logger
    }

    /// Creates the database file, when missing, readable and writable by its owner only (0600) whatever the process
    /// umask, and takes the other bits off an existing one and its `-wal` and `-shm` files: SQLite creates those two
    /// with the database file's mode, so they follow.
    static func restrictToOwner(_ path: String) throws {
        let descriptor = Glibc.open(path, O_CREAT | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError.unavailable("cannot open the SQLite database at \(path): \(String(cString: strerror(errno)))")
        }
        defer { Glibc.close(descriptor) }
        guard fchmod(descriptor, 0o600) == 0 else {
            throw StoreError.unavailable("cannot make the SQLite database at \(path) its owner's only: \(String(cString: strerror(errno)))")
        }
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            chmod(path + suffix, 0o600)
        }
    }

    /// Opens (creating when missing, 0600) the database file at `path`.
    public static func open(path: String, logger: Logger) async throws -> SQLiteDatabaseClient {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.maximumReaderCount = 8
        configuration.foreignKeysEnabled = true
        // A group commit spans several calls into GRDB between its BEGIN and COMMIT.
        configuration.allowsUnsafeTransactions = true
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        do {
            try restrictToOwner(path)
            let pool = try DatabasePool(path: path, configuration: configuration)
            // GRDB sets NORMAL when it turns WAL on; Orchard answers only once a commit is on disk.
            try await pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
            // After the pool: its writer has put the file in WAL mode, which the readers then share.
            let reader = try SQLiteReader(path: path, count: 4, configuration: configuration)
            // A connection per core (at least two), so that the event loops' session checks each look on one of their own.
            let watch = try SQLiteChangeWatch(path: path, count: max(2, ProcessInfo.processInfo.activeProcessorCount), configuration: configuration)
            let checkpointer = try SQLiteCheckpointer(path: path, configuration: configuration)
            try await pool.writeWithoutTransaction { checkpointer.install(on: $0) }
            return SQLiteDatabaseClient(pool: pool, reader: reader, watch: watch, checkpointer: checkpointer, path: path, logger: logger)
        } catch {
            throw StoreError.unavailable("cannot open the SQLite database at \(path): \(error)")
        }
    }

    /// What the session memory needs of this database: a look at what other processes committed.
    public var sessionBackend: SessionBackend { .singleProcess(watch) }

    /// Itself: SQLite operations have no deadline (a busy writer answers at once, after its busy timeout).
    public var withoutDeadline: any DatabaseClient { self }

    /// Runs `body` outside any transaction: its reads on reader connections, each write group-committed on its own.
    public func withDatabase<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await body(database)
    }

    /// The rows of a `SELECT`, read on the ``SQLiteReader`` on the calling thread (suspending only while every reader
    /// connection is in use).
    public func read(_ query: SQLQueryString) async throws -> [any SQLRow] {
        let (sql, binds) = database.serialize(query)
        do {
            return try await reader.rows(sql, binds)
        } catch {
            throw GRDBSQLDatabase.mapped(error)
        }
    }

    private var database: GRDBSQLDatabase { GRDBSQLDatabase(route: .autocommit(reader, writer), logger: logger) }

    /// Runs `body` in an immediate transaction on the writer, committed together with the other transactions waiting.
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await writer.transaction { try await body($0) }
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

    /// Closes the connections.
    public func close() async {
        await writer.stop()
        do {
            try await pool.writeWithoutTransaction { checkpointer.uninstall(from: $0) }
            try checkpointer.close()
            try reader.close()
            try watch.close()
            try pool.close()
        } catch {
            logger.warning("closing the SQLite database failed", metadata: ["error": "\(error)"])
        }
    }
}
