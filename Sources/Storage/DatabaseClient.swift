import Accounts
public import SQLKit

/// A database Orchard's stores run their SQL on: SQLite or PostgreSQL.
///
/// Every call either reads on its own or runs a whole transaction on one pinned connection; errors reaching the caller
/// are ``Accounts/StoreError``. It knows nothing of sessions: the stores end sessions through ``SessionKeeper``.
public protocol DatabaseClient: Sendable {
    /// Which SQL dialect the database speaks, for the few statements where the dialects differ.
    var flavor: DatabaseFlavor { get }
    /// Runs `body` on a connection outside any explicit transaction.
    func withDatabase<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T
    /// The rows of a `SELECT` outside any transaction: each backend's one read path (SQLite's reader connections on the
    /// calling thread; PostgreSQL's pool).
    func read(_ query: SQLQueryString) async throws -> [any SQLRow]
    /// Runs `body` in one transaction on one connection; commits when it returns, rolls back when it throws.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T
    /// The same database without the per-operation deadline an outage is answered by, for work that may rightly take
    /// long: the migrator's (an index built on a large table, a replica waiting for another's migration lock). The
    /// database itself when it has no deadline (SQLite).
    var withoutDeadline: any DatabaseClient { get }
    /// Makes a committed deletion final in the files (SQLite: checkpoint and truncate the WAL, so no copy of a deleted
    /// row lingers in it; PostgreSQL: nothing, see docs/deletion.md).
    func purgeDeletedData() async throws
    /// Closes the connections.
    func close() async
}

/// The SQL dialects Orchard supports.
public enum DatabaseFlavor: String, Sendable {
    /// Embedded SQLite (the default).
    case sqlite
    /// PostgreSQL (several replicas).
    case postgres
}
