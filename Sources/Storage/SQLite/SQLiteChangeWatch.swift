import GRDB
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

    /// One connection and the `data_version` it last saw (a value only that connection's looks can be compared to).
    private final class Watcher: Sendable {
        let connection: DatabaseQueue
        let seenVersion = Mutex<Int64?>(nil)

        init(connection: DatabaseQueue) {
            self.connection = connection
        }

        func look(_ seen: inout Int64?) throws -> Look {
            do {
                return try connection.inDatabase { db in
                    let version = try SQLiteStatement.integer("PRAGMA data_version", on: db) ?? 0
                    guard version != seen else { return .unchanged }
                    let epoch = try SQLiteStatement.integer("SELECT value FROM session_epoch WHERE id = 1", on: db) ?? 0
                    seen = version
                    return .committed(epoch: epoch)
                }
            } catch {
                seen = nil
                throw error
            }
        }
    }

    private let watchers: [Watcher]

    init(path: String, count: Int, configuration: Configuration) throws {
        var configuration = configuration
        configuration.readonly = true
        watchers = try (0..<max(1, count)).map { _ in Watcher(connection: try DatabaseQueue(path: path, configuration: configuration)) }
    }

    /// Whether anything was committed since the last look on the connection this look takes, and if so the committed
    /// `session_epoch`. A connection busy with another thread's look is passed over; when every one is, the look waits
    /// for the first.
    func look() throws -> Look {
        for watcher in watchers {
            if let look = try watcher.seenVersion.withLockIfAvailable({ seen in try watcher.look(&seen) }) { return look }
        }
        return try look(connection: 0)
    }

    /// The look on connection `index` (of `count`) alone, waiting for it while another thread's look holds it.
    func look(connection index: Int) throws -> Look {
        let watcher = watchers[index]
        return try watcher.seenVersion.withLock { seen in try watcher.look(&seen) }
    }

    /// Closes its connections.
    func close() throws {
        for watcher in watchers { try watcher.connection.close() }
    }
}
