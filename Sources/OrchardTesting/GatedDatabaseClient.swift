import Accounts
import Logging
import NIOCore
public import SQLKit
public import Storage
import Synchronization

/// A database that can hold one read back after it ran, for tests of what the lifecycle does when something commits
/// between its read and its write (a sign-in between a deletion's read of the account and its transaction, say).
///
/// Armed with a predicate on the SQL, the next read (``read(_:)``, or ``withDatabase(_:)`` that ran a matching
/// statement) returns only once the test opens the gate; it holds no connection and no lock meanwhile. Everything else
/// passes straight through.
public final class GatedDatabaseClient: WrappingDatabaseClient {
    private struct State {
        var predicate: (@Sendable (String) -> Bool)?
        /// Holds a transaction inside itself, after its matching statement, rather than a read after it ran.
        var inTransaction = false
        var held: CheckedContinuation<Void, Never>?
        var isHolding = false
    }

    public let base: any DatabaseClient
    private let state = Mutex(State())

    /// Wraps `base`.
    public init(_ base: any DatabaseClient) {
        self.base = base
    }

    /// Holds back the next read that runs a statement matching `predicate`.
    public func arm(_ predicate: @escaping @Sendable (String) -> Bool) {
        state.withLock {
            $0.predicate = predicate
            $0.inTransaction = false
        }
    }

    /// Holds the next transaction that runs a statement matching `predicate` right after that statement, inside the
    /// transaction: its locks stay held (and on SQLite the writer stays taken) until ``open()``.
    public func armInTransaction(_ predicate: @escaping @Sendable (String) -> Bool) {
        state.withLock {
            $0.predicate = predicate
            $0.inTransaction = true
        }
    }

    /// Whether a read is being held.
    public var isHolding: Bool { state.withLock { $0.isHolding } }

    /// Lets the held read return (and disarms).
    public func open() {
        let held = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.predicate = nil
            state.isHolding = false
            defer { state.held = nil }
            return state.held
        }
        held?.resume()
    }

    /// Runs `body` on the wrapped database; while armed, a run that executed a matching statement is held after it.
    public func withDatabase<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        guard let predicate = state.withLock({ $0.predicate }) else { return try await base.withDatabase(body) }
        let matched = Mutex(false)
        let result = try await base.withDatabase { db in
            try await body(RecordingSQLDatabase(base: db) { sql in if predicate(sql) { matched.withLock { $0 = true } } })
        }
        guard matched.withLock({ $0 }) else { return result }
        await hold()
        return result
    }

    /// Waits until ``open()``, unless a read is held already or the gate was disarmed.
    private func hold() async {
        await withCheckedContinuation { continuation in
            let release = state.withLock { state -> Bool in
                guard state.predicate != nil, state.held == nil else { return true }
                state.held = continuation
                state.isHolding = true
                return false
            }
            if release { continuation.resume() }
        }
    }

    /// The wrapped database's rows; while armed, a matching read is held after it.
    public func read(_ query: SQLQueryString) async throws -> [any SQLRow] {
        guard let predicate = state.withLock({ $0.predicate }) else { return try await base.read(query) }
        let sql = try await base.withDatabase { db in db.serialize(query).sql }
        let rows = try await base.read(query)
        if predicate(sql) { await hold() }
        return rows
    }

    /// The wrapped database's transaction; while armed with ``armInTransaction(_:)``, held after a matching statement.
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        guard let predicate = state.withLock({ $0.inTransaction ? $0.predicate : nil }) else { return try await base.transaction(body) }
        return try await base.transaction { db in
            try await body(HoldingSQLDatabase(base: db) { sql in if predicate(sql) { await self.hold() } })
        }
    }

}

/// An `SQLDatabase` that awaits `after` with the text of every statement once it has run.
struct HoldingSQLDatabase: SQLDatabase {
    let base: any SQLDatabase
    let after: @Sendable (String) async -> Void

    var logger: Logger { base.logger }
    var eventLoop: any EventLoop { base.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { base.version }
    var dialect: any SQLDialect { base.dialect }
    var queryLogLevel: Logger.Level? { base.queryLogLevel }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        promise.completeWithTask { try await self.execute(sql: query, onRow) }
        return promise.futureResult
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try await base.execute(sql: query, onRow)
        await after(base.serialize(query).sql)
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await base.withSession { try await closure(HoldingSQLDatabase(base: $0, after: after)) }
    }
}

/// An `SQLDatabase` that tells `seen` the text of every statement it runs.
struct RecordingSQLDatabase: SQLDatabase {
    let base: any SQLDatabase
    let seen: @Sendable (String) -> Void

    var logger: Logger { base.logger }
    var eventLoop: any EventLoop { base.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { base.version }
    var dialect: any SQLDialect { base.dialect }
    var queryLogLevel: Logger.Level? { base.queryLogLevel }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
        seen(base.serialize(query).sql)
        return base.execute(sql: query, onRow)
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        seen(base.serialize(query).sql)
        try await base.execute(sql: query, onRow)
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await base.withSession { try await closure(RecordingSQLDatabase(base: $0, seen: seen)) }
    }
}
