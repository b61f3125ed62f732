import GRDB
import Synchronization

/// Reader connections for the statements a request reads with, each used by one thread at a time.
///
/// GRDB's `DatabasePool` already reads on its own connections, but each of its reads first runs `PRAGMA
/// schema_version` (a second statement, with its own read transaction and file locks) and takes its reader through a
/// semaphore, a dispatch group and a barrier queue. From outside, a `SELECT 1` cost a request about 20 µs of CPU that
/// way. Orchard's schema changes only in `orchard migrate` and at start, before anything is served, and its SQL names
/// its columns, so the schema check buys nothing here: these connections run each statement directly, still in WAL
/// mode, so a read never waits for the writer and sees every commit made before it began.
final class SQLiteReaders: Sendable {
    private let connections: [DatabaseQueue]
    /// The indices of the connections nobody is using.
    private let idle: Mutex<[Int]>

    /// Opens `count` read-only connections to the database at `path`.
    init(path: String, count: Int, configuration: Configuration) throws {
        var configuration = configuration
        configuration.readonly = true
        connections = try (0..<count).map { _ in try DatabaseQueue(path: path, configuration: configuration) }
        idle = Mutex(Array(connections.indices))
    }

    /// Runs `body` on an idle reader connection, synchronously on this thread; `nil` when every connection is in use
    /// (the caller then reads another way).
    func read<T>(_ body: (Database) throws -> T) throws -> T? {
        guard let index = idle.withLock({ $0.popLast() }) else { return nil }
        defer { idle.withLock { $0.append(index) } }
        return try connections[index].inDatabase(body)
    }

    /// Closes the connections.
    func close() throws {
        for connection in connections { try connection.close() }
    }
}
