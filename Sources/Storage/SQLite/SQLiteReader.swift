import GRDB
import SQLKit
import Synchronization

/// SQLite's one read path: every `SELECT` outside a transaction runs here, on one of a few read-only connections, on
/// the calling thread (``SQLiteStatement``), so a read costs no thread hop and no suspension. A read waits, suspended,
/// only when every connection is in use.
///
/// GRDB's `DatabasePool` reads on its own connections too, but each of its reads first runs `PRAGMA schema_version` (a
/// second statement, with its own read transaction and file locks) and takes its reader through a semaphore, a
/// dispatch group and a barrier queue. Orchard's schema changes only in `orchard migrate` and at start, before
/// anything is served, and its SQL names its columns, so the schema check buys nothing here. The connections are in
/// WAL mode: a read never waits for the writer and sees every commit made before it began. `Benchmarks/run`'s session
/// check guards this path.
final class SQLiteReader: Sendable {
    private struct Pool {
        var idle: [Int]
        var waiting: [CheckedContinuation<Int, Never>] = []
    }

    private let connections: [DatabaseQueue]
    private let pool: Mutex<Pool>

    /// Opens `count` read-only connections to the database at `path`.
    init(path: String, count: Int, configuration: Configuration) throws {
        var configuration = configuration
        configuration.readonly = true
        connections = try (0..<count).map { _ in try DatabaseQueue(path: path, configuration: configuration) }
        pool = Mutex(Pool(idle: Array(connections.indices)))
    }

    /// The rows of `sql` with `binds`, read on a connection of this reader.
    func rows(_ sql: String, _ binds: [any Encodable & Sendable]) async throws -> [any SQLRow] {
        let index = await acquire()
        defer { release(index) }
        var rows: [any SQLRow] = []
        try connections[index].inDatabase { database in
            try SQLiteStatement.run(sql, binds, on: database) { rows.append($0) }
        }
        return rows
    }

    /// An idle connection: at once when there is one, else the next one handed back.
    private func acquire() async -> Int {
        if let index = pool.withLock({ $0.idle.popLast() }) { return index }
        return await withCheckedContinuation { continuation in
            let index = pool.withLock { pool -> Int? in
                if let index = pool.idle.popLast() { return index }
                pool.waiting.append(continuation)
                return nil
            }
            if let index { continuation.resume(returning: index) }
        }
    }

    /// Hands `index` to the longest waiting read, else back to the idle ones.
    private func release(_ index: Int) {
        let waiter = pool.withLock { pool -> CheckedContinuation<Int, Never>? in
            guard !pool.waiting.isEmpty else {
                pool.idle.append(index)
                return nil
            }
            return pool.waiting.removeFirst()
        }
        waiter?.resume(returning: index)
    }

    /// Closes the connections.
    func close() throws {
        for connection in connections { try connection.close() }
    }
}
