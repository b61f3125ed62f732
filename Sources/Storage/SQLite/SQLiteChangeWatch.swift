import GRDB
import GRDBSQLite
import Synchronization

/// What another process (an operator's command beside `serve`) changed in the SQLite file, seen from read-only
/// connections of its own: `PRAGMA data_version`, which moves whenever any other connection commits, and the
/// `session_epoch` counter, which every change to what a session check shows moves in its own transaction.
///
/// Each look runs on the calling thread, on whichever of its connections is free: `data_version` alone answers while
/// nothing was committed since that connection's last look, which is the session check's common case
/// (`Benchmarks/run`'s SQLite session check). Two event loops checking sessions at once each take a connection of
/// their own: with one connection behind one lock (as before) they queued for it, and the lock's contended path (its
/// spinning and futex calls) showed in serve's profile (Benchmarks/README, A17).
public final class SQLiteChangeWatch: Sendable {
    /// What one look found.
    enum Look: Equatable {
        /// Nothing committed since the last look on the same connection.
        case unchanged
        /// Something was: the `session_epoch` counter as committed now.
        case committed(epoch: Int64)
    }

    /// One connection, its two statements and the `data_version` it last saw (a value only that connection's looks can
    /// be compared to).
    ///
    /// GRDB opens and closes the connection (with the database's configuration: read-only, the busy timeout); the looks
    /// step its two statements through the SQLite API on the calling thread, under this watcher's lock, which is all
    /// the serialising a connection needs. GRDB's `inDatabase` would take each look through a dispatch queue's `sync`
    /// and its statement cache: about 3 % of serve's samples under the session check (Benchmarks/README, A20).
    private final class Watcher: Sendable {
        let connection: DatabaseQueue
        private let state: Mutex<State>

        private struct State {
            let raw: OpaquePointer
            /// Prepared on the first look that needs each (`session_epoch` exists only once the database is migrated).
            var version: OpaquePointer?
            var epoch: OpaquePointer?
            var seen: Int64?
            var closed = false
        }

        init(connection: DatabaseQueue) throws {
            self.connection = connection
            guard let raw = connection.inDatabase({ $0.sqliteConnection }) else {
                throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the connection is closed")
            }
            state = Mutex(State(raw: raw))
        }

        /// The look, waiting for the connection while another thread's look holds it.
        func look() throws -> Look {
            try state.withLock { try Self.look(&$0) }
        }

        /// The look, or `nil` without waiting while another thread's look holds the connection.
        func lookIfFree() throws -> Look? {
            try state.withLockIfAvailable { try Self.look(&$0) }
        }

        private static func look(_ state: inout State) throws -> Look {
            do {
                guard !state.closed else { throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the change watch is closed") }
                let version = try integer("PRAGMA data_version", &state.version, on: state.raw)
                guard version != state.seen else { return .unchanged }
                let epoch = try integer("SELECT value FROM session_epoch WHERE id = 1", &state.epoch, on: state.raw)
                state.seen = version
                return .committed(epoch: epoch)
            } catch {
                state.seen = nil
                throw error
            }
        }

        /// The first column of `sql`'s first row (0 for no row), prepared into `statement` once.
        private static func integer(_ sql: String, _ statement: inout OpaquePointer?, on raw: OpaquePointer) throws -> Int64 {
            if statement == nil {
                let code = sqlite3_prepare_v3(raw, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
                guard code == SQLITE_OK else {
                    sqlite3_finalize(statement)
                    statement = nil
                    throw failure(code, sql: sql, on: raw)
                }
            }
            let prepared = statement
            defer { sqlite3_reset(prepared) }
            switch sqlite3_step(prepared) {
            case SQLITE_ROW: return sqlite3_column_int64(prepared, 0)
            case SQLITE_DONE: return 0
            case let code: throw failure(code, sql: sql, on: raw)
            }
        }

        private static func failure(_ code: Int32, sql: String, on raw: OpaquePointer) -> DatabaseError {
            DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(raw)), sql: sql)
        }

        /// Finalizes the statements (SQLite closes no connection with statements left), then closes the connection.
        func close() throws {
            finalize()
            try connection.close()
        }

        /// A watcher dropped without ``close()`` (a client never closed) still leaves GRDB's connection nothing to hold
        /// it open when GRDB closes it in turn.
        deinit {
            finalize()
        }

        private func finalize() {
            state.withLock { state in
                sqlite3_finalize(state.version)
                sqlite3_finalize(state.epoch)
                state.version = nil
                state.epoch = nil
                state.closed = true
            }
        }
    }

    private let watchers: [Watcher]

    init(path: String, count: Int, configuration: Configuration) throws {
        var configuration = configuration
        configuration.readonly = true
        watchers = try (0..<max(1, count)).map { _ in try Watcher(connection: try DatabaseQueue(path: path, configuration: configuration)) }
    }

    /// Whether anything was committed since the last look on the connection this look takes, and if so the committed
    /// `session_epoch`. A connection busy with another thread's look is passed over; when every one is, the look waits
    /// for the first.
    func look() throws -> Look {
        for watcher in watchers {
            if let look = try watcher.lookIfFree() { return look }
        }
        return try look(connection: 0)
    }

    /// The look on connection `index` (of `count`) alone, waiting for it while another thread's look holds it.
    func look(connection index: Int) throws -> Look {
        try watchers[index].look()
    }

    /// Closes its connections.
    func close() throws {
        for watcher in watchers { try watcher.close() }
    }
}
