import GRDB
import GRDBSQLite
import Synchronization

/// What another process (an operator's command beside `serve`) changed in the SQLite file, seen from read-only
/// connections of its own: `PRAGMA data_version`, which moves whenever any other connection commits, and the
/// `session_epoch` counter, which every change to what a session check shows moves in its own transaction.
///
/// Each look runs on the calling thread, on whichever of its connections is free. While nothing was committed since
/// that connection's last look (the session check's common case, `Benchmarks/run`'s SQLite session check), the look
/// reads no statement: every commit, by any process, rewrites the header of the WAL index (the `-shm` file, which
/// SQLite keeps mapped for each connection), and a look whose header is the one its last look saw answers
/// ``Look/unchanged`` from it. Stepping `PRAGMA data_version` takes and drops a read lock of SQLite's (two `fcntl`
/// calls) and runs SQLite's VM: about 2.5 % of serve's samples under the session check (Benchmarks/README, A21). Two
/// event loops checking sessions at once each take a connection of their own: with one connection behind one lock (as
/// before) they queued for it, and the lock's contended path (its spinning and futex calls) showed in serve's profile
/// (Benchmarks/README, A17).
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
            /// SQLite's own mapping of the WAL index's first region, valid while the connection is open; `nil` until a
            /// look has read the file in WAL mode.
            var walIndex: UnsafeRawPointer?
            /// The WAL index's header as read just before the look that saw `seen`.
            var seenHeader: WALIndexHeader?
            /// Looks that stepped `data_version` (for the tests: a look answered from the header steps nothing).
            var statementLooks = 0
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
                // Read before the statement: a commit after this read changes the header the next look compares.
                let header = state.walIndex.flatMap(WALIndexHeader.init(reading:))
                if let header, header == state.seenHeader { return .unchanged }
                state.statementLooks += 1
                let version = try integer("PRAGMA data_version", &state.version, on: state.raw)
                if state.walIndex == nil { state.walIndex = walIndex(of: state.raw) }
                if version == state.seen {
                    state.seenHeader = header
                    return .unchanged
                }
                let epoch = try integer("SELECT value FROM session_epoch WHERE id = 1", &state.epoch, on: state.raw)
                state.seen = version
                state.seenHeader = header
                return .committed(epoch: epoch)
            } catch {
                state.seen = nil
                state.seenHeader = nil
                throw error
            }
        }

        /// Looks that stepped `data_version` so far.
        var statementLooks: Int { state.withLock { $0.statementLooks } }

        /// The first region of the WAL index as SQLite maps it for `raw` (its VFS's `xShmMap`, without growing the
        /// file), or `nil` when the connection has none (not in WAL mode, or a VFS without shared memory).
        private static func walIndex(of raw: OpaquePointer) -> UnsafeRawPointer? {
            var file: UnsafeMutablePointer<sqlite3_file>?
            guard sqlite3_file_control(raw, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK,
                let methods = file?.pointee.pMethods, methods.pointee.iVersion >= 2,
                let map = methods.pointee.xShmMap
            else { return nil }
            var region: UnsafeMutableRawPointer?
            let code = map(file, 0, WALIndexHeader.regionSize, 0, &region)
            // A read-only mapping still answers with its region (`SQLITE_READONLY`).
            guard code == SQLITE_OK || code == SQLITE_READONLY, let region else { return nil }
            return UnsafeRawPointer(region)
        }

        /// The first column of `sql`'s first row (0 for no row), prepared into `statement` once.
        private static func integer(_ sql: String, _ statement: inout OpaquePointer?, on raw: OpaquePointer) throws -> Int64 {
            if statement == nil {
                let code = sqlite3_prepare_v3(raw, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
                guard code == SQLITE_OK else {
                    sqlite3_finalize(statement)
                    statement = nil
                    throw SQLiteStatement.failure(code, sql: sql, on: raw)
                }
            }
            let prepared = statement
            defer { sqlite3_reset(prepared) }
            switch sqlite3_step(prepared) {
            case SQLITE_ROW: return sqlite3_column_int64(prepared, 0)
            case SQLITE_DONE: return 0
            case let code: throw SQLiteStatement.failure(code, sql: sql, on: raw)
            }
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

    /// The header at the start of SQLite's WAL index (its file format's "WAL-Index Format"): two copies of 48 bytes,
    /// which every commit rewrites (its change counter moves; a restarted log changes its salts), the second copy first.
    /// Read as SQLite reads it: the first copy, then the second, and only two equal copies count; a header caught
    /// mid-write, or not yet initialised, reads as `nil` and the look steps its statement.
    struct WALIndexHeader: Equatable {
        /// The size of a region of the WAL index, as every SQLite maps it.
        static let regionSize: Int32 = 32_768
        private static let size = 48
        private var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

        init?(reading index: UnsafeRawPointer) {
            let first = Self.words(at: index)
            atomicMemoryFence(ordering: .acquiring)
            let second = Self.words(at: index + Self.size)
            // Byte 12 is `isInit`, set once the header is valid.
            guard Self.equal(first, second), index.load(fromByteOffset: 12, as: UInt8.self) != 0 else { return nil }
            words = first
        }

        static func == (lhs: Self, rhs: Self) -> Bool { equal(lhs.words, rhs.words) }

        private static func words(at pointer: UnsafeRawPointer) -> (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) {
            (
                pointer.load(fromByteOffset: 0, as: UInt64.self), pointer.load(fromByteOffset: 8, as: UInt64.self),
                pointer.load(fromByteOffset: 16, as: UInt64.self), pointer.load(fromByteOffset: 24, as: UInt64.self),
                pointer.load(fromByteOffset: 32, as: UInt64.self), pointer.load(fromByteOffset: 40, as: UInt64.self)
            )
        }

        private static func equal(
            _ a: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64),
            _ b: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
        ) -> Bool {
            a.0 == b.0 && a.1 == b.1 && a.2 == b.2 && a.3 == b.3 && a.4 == b.4 && a.5 == b.5
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

    /// Looks that stepped `data_version` so far, on every connection.
    var statementLooks: Int { watchers.reduce(0) { $0 + $1.statementLooks } }

    /// Closes its connections.
    func close() throws {
        for watcher in watchers { try watcher.close() }
    }
}
