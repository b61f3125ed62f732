public import Accounts
public import SQLKit

/// A database Orchard's stores run their SQL on: SQLite or PostgreSQL.
///
/// Every call either reads on its own or runs a whole transaction on one pinned connection; errors reaching the caller
/// are ``Accounts/StoreError``.
public protocol DatabaseClient: Sendable {
    /// Which SQL dialect the database speaks, for the few statements where the dialects differ.
    var flavor: DatabaseFlavor { get }
    /// Runs `body` on a connection outside any explicit transaction.
    func withDatabase<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T
    /// The rows of a `SELECT` outside any transaction: each backend's one read path (SQLite's reader connections on the
    /// calling thread; PostgreSQL's pool).
    func read(_ query: SQLQueryString) async throws -> [any SQLRow]
    /// Runs `body` in one transaction on one connection; commits when it returns, rolls back when it throws.
    func transaction<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T
    /// The same database without the per-operation deadline an outage is answered by, for work that may rightly take
    /// long: the migrator's (an index built on a large table, a replica waiting for another's migration lock). The
    /// database itself when it has no deadline (SQLite).
    var withoutDeadline: any DatabaseClient { get }
    /// Makes a committed deletion final in the files (SQLite: checkpoint and truncate the WAL, so no copy of a deleted
    /// row lingers in it; PostgreSQL: nothing, see docs/deletion.md).
    func purgeDeletedData() async throws
    /// Closes the connections.
    func close() async
    /// The session behind `tokenHash` as `read` finds it in the database, or, when `mayRemember` and this replica
    /// remembers it (PostgreSQL's session memory, docs/replicas-postgresql.md), as last read within a second. `read`
    /// reads the sessions of the token hashes it is given: PostgreSQL reads concurrent checks together.
    func session(
        tokenHash: String,
        mayRemember: Bool,
        read: ([String]) async throws -> [SessionWithAccount]
    ) async throws -> SessionWithAccount?
    /// Runs `change`, a transaction that ends `target`'s sessions, once no replica answers for them from memory.
    func endingSessions<T: Sendable>(
        _ target: SessionEndTarget,
        _ change: @escaping @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T
    /// An account's shown fields changed: what this replica remembers of its sessions goes.
    func changed(account accountID: String)
}

extension DatabaseClient {
    /// Reads the database, for this check alone: one process remembers nothing.
    public func session(
        tokenHash: String,
        mayRemember: Bool,
        read: ([String]) async throws -> [SessionWithAccount]
    ) async throws -> SessionWithAccount? {
        try await read([tokenHash]).first
    }

    /// The change's transaction: nobody else remembers sessions.
    public func endingSessions<T: Sendable>(
        _ target: SessionEndTarget,
        _ change: @escaping @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        try await transaction(change)
    }

    /// Nothing remembered.
    public func changed(account accountID: String) {}
}

/// The SQL dialects Orchard supports.
public enum DatabaseFlavor: String, Sendable {
    /// Embedded SQLite (the default).
    case sqlite
    /// PostgreSQL (several replicas).
    case postgres
}
