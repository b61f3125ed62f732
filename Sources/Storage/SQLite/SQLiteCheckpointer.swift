import Dispatch
import GRDB
import GRDBSQLite
import Synchronization

/// Checkpoints the WAL from a connection of its own, on a thread of its own, in place of SQLite's automatic
/// checkpoint, which runs inside the `COMMIT` that takes the WAL past 1,000 pages: on the writer's thread, where it
/// held every waiting write behind copying those pages into the database file and its fsync.
///
/// Installed on the writer connection as its WAL hook (which replaces the automatic checkpoint): once commits have added
/// ``threshold`` pages to the WAL since the last checkpoint started, a `PASSIVE` checkpoint runs on the checkpointer's
/// connection, beside the writer and the readers (it takes neither the write lock nor waits for readers), and the
/// writer starts the WAL over once everything in it has been copied. At most one runs at a time; a commit that finds
/// one running starts none.
final class SQLiteCheckpointer: Sendable {
    /// SQLite's own threshold for its automatic checkpoint.
    static let threshold: Int32 = 1000

    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "orchard.sqlite.checkpoint")
    private struct State {
        var running = false
        /// The WAL's pages when the last checkpoint started.
        var pagesAtLastStart: Int32 = 0
        /// Whether the hook is installed, and so holds this checkpointer.
        var installed = false
    }

    private let state = Mutex(State())

    init(path: String, configuration: Configuration) throws {
        connection = try DatabaseQueue(path: path, configuration: configuration)
    }

    /// Makes this checkpointer the writer connection's WAL hook, which holds it until ``uninstall(from:)``; the writer no
    /// longer checkpoints by itself.
    func install(on db: Database) {
        let installs = state.withLock { state in
            defer { state.installed = true }
            return !state.installed
        }
        guard installs else { return }
        sqlite3_wal_hook(db.sqliteConnection, walHook, Unmanaged.passRetained(self).toOpaque())
    }

    /// Takes the hook off the writer connection again, and its hold on this checkpointer, before either is closed.
    func uninstall(from db: Database) {
        let uninstalls = state.withLock { state in
            defer { state.installed = false }
            return state.installed
        }
        guard uninstalls else { return }
        sqlite3_wal_hook(db.sqliteConnection, nil, nil)
        Unmanaged.passUnretained(self).release()
    }

    /// Called by SQLite after each commit of the writer, with the pages now in the WAL.
    fileprivate func committed(walPages: Int32) {
        let starts = state.withLock { state in
            // Fewer pages than at the last start: the writer started the WAL over since.
            if walPages < state.pagesAtLastStart { state.pagesAtLastStart = 0 }
            guard !state.running, walPages - state.pagesAtLastStart >= Self.threshold else { return false }
            state.running = true
            state.pagesAtLastStart = walPages
            return true
        }
        guard starts else { return }
        queue.async {
            // A checkpoint that cannot run now (another process's, say) is tried again after later commits.
            _ = try? self.connection.inDatabase { try $0.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)") }
            self.state.withLock { $0.running = false }
        }
    }

    /// Waits for a checkpoint in flight, then closes the connection.
    func close() throws {
        queue.sync {}
        try connection.close()
    }
}

/// SQLite's WAL hook: `context` is the ``SQLiteCheckpointer`` that ``SQLiteCheckpointer/install(on:)`` retained for it.
private func walHook(
    _ context: UnsafeMutableRawPointer?,
    _ connection: OpaquePointer?,
    _ database: UnsafePointer<CChar>?,
    _ pages: Int32
) -> Int32 {
    if let context {
        Unmanaged<SQLiteCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(walPages: pages)
    }
    return SQLITE_OK
}
