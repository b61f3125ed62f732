import GRDB

/// What another process (an operator's command beside `serve`) changed in the SQLite file, seen from one read-only
/// connection of its own: `PRAGMA data_version`, which moves whenever any other connection commits, and the
/// `session_epoch` counter, which every change to what a session check shows moves in its own transaction.
///
/// Both are read on the calling thread, one statement each; `data_version` alone answers while nothing was committed
/// since the last look, which is the session check's common case (`Benchmarks/run`'s SQLite session check).
public final class SQLiteChangeWatch: Sendable {
    private let connection: DatabaseQueue

    init(path: String, configuration: Configuration) throws {
        var configuration = configuration
        configuration.readonly = true
        connection = try DatabaseQueue(path: path, configuration: configuration)
    }

    /// `PRAGMA data_version`: the same value while no other connection has committed.
    func dataVersion() throws -> Int64 {
        try connection.inDatabase { try Int64.fetchOne($0.cachedStatement(sql: "PRAGMA data_version")) ?? 0 }
    }

    /// The `session_epoch` counter as committed.
    func epoch() throws -> Int64 {
        try connection.inDatabase { try Int64.fetchOne($0.cachedStatement(sql: "SELECT value FROM session_epoch WHERE id = 1")) ?? 0 }
    }

    /// Closes its connection.
    func close() throws {
        try connection.close()
    }
}
