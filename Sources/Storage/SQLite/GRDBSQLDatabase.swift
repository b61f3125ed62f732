import Accounts
import Foundation
import GRDB
import GRDBSQLite
import Logging
import NIOCore
import NIOPosix
import SQLKit

/// SQLKit's view of Orchard's SQLite file, run by GRDB: every statement executes synchronously on the calling thread,
/// on a connection chosen by ``Route``, so a read costs no thread hop.
struct GRDBSQLDatabase: SQLDatabase {
    /// Which connection the statements run on.
    enum Route: Sendable {
        /// Outside a transaction: each `SELECT` on a reader connection (WAL: readers never wait for the writer), each
        /// write as its own group-committed transaction, each `PRAGMA` alone on the writer.
        case autocommit(DatabasePool, SQLiteReaders, SQLiteWriter)
        /// On the writer connection, inside the transaction its group holds.
        case writer(DatabasePool)
    }

    let route: Route
    let logger: Logger

    var eventLoop: any EventLoop { MultiThreadedEventLoopGroup.singleton.any() }
    var dialect: any SQLDialect { OrchardSQLiteDialect() }
    /// SQLKit logs no statement: bound values (sealed tokens, hashes) must never reach a log.
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLKit.SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        promise.completeWithTask { try await self.execute(sql: query, onRow) }
        return promise.futureResult
    }

    func execute(sql query: any SQLKit.SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        let (sql, binds) = serialize(query)
        logger.trace("sql", metadata: ["sql": "\(sql)"])
        let arguments = try Self.arguments(binds)
        do {
            switch route {
            case .writer(let pool):
                try Self.onWriter(pool, sql, arguments, onRow)
            case .autocommit(let pool, let readers, let writer):
                switch SQLiteStatementKind(sql: sql) {
                case .read:
                    try Self.onReader(pool, readers, sql, arguments, onRow)
                case .pragma:
                    try await writer.exclusive { try await $0.execute(sql: query, onRow) }
                case .write:
                    try await writer.transaction { try await $0.execute(sql: query, onRow) }
                }
            }
        } catch {
            throw Self.mapped(error)
        }
    }

    /// The rows of a `SELECT` read on a reader connection on this thread; `nil` when `query` is not a read or every
    /// ``SQLiteReaders`` connection is busy (the caller then takes the async path). Only outside a transaction.
    func readNow(_ query: any SQLKit.SQLExpression) throws -> [any SQLRow]? {
        guard case .autocommit(_, let readers, _) = route else { return nil }
        let (sql, binds) = serialize(query)
        guard SQLiteStatementKind(sql: sql) == .read else { return nil }
        logger.trace("sql", metadata: ["sql": "\(sql)"])
        var rows: [any SQLRow] = []
        do {
            let done: Void? = try readers.read { try Self.read(sql, binds, on: $0) { rows.append($0) } }
            return done == nil ? nil : rows
        } catch {
            throw Self.mapped(error)
        }
    }

    /// Runs a statement on the writer connection, synchronously on this thread (GRDB's blocking API: its async one would
    /// hop to the writer's dispatch queue and back for every statement).
    private static func onWriter(
        _ pool: DatabasePool,
        _ sql: String,
        _ arguments: StatementArguments,
        _ onRow: @Sendable (any SQLRow) -> Void
    ) throws {
        try pool.writeWithoutTransaction { try run(sql, arguments, on: $0, onRow) }
    }

    /// Runs a query on a reader connection, synchronously on this thread: one of ``SQLiteReaders``, or the pool's
    /// readers when all of those are in use.
    private static func onReader(
        _ pool: DatabasePool,
        _ readers: SQLiteReaders,
        _ sql: String,
        _ arguments: StatementArguments,
        _ onRow: @Sendable (any SQLRow) -> Void
    ) throws {
        let done: Void? = try readers.read { try read(sql, arguments, on: $0, onRow) }
        if done == nil {
            try pool.unsafeRead { try read(sql, arguments, on: $0, onRow) }
        }
    }

    /// Runs a query on a reader connection by stepping GRDB's cached statement through the SQLite API and copying each
    /// row's values: GRDB's row cursor (a `Row` over the statement, then the values copied out of it) was a quarter of
    /// the read's cost in the session check's profile. Reads only: statements that write go through GRDB, which keeps
    /// its own account of them.
    private static func read(
        _ sql: String,
        _ arguments: StatementArguments,
        on database: Database,
        _ onRow: (any SQLRow) -> Void
    ) throws {
        let statement = try database.cachedStatement(sql: sql)
        try statement.setArguments(arguments)
        try step(statement, sql, on: database, onRow)
    }

    /// ``read(_:_:on:_:)-(_,StatementArguments,_,_)`` with SQLKit's binds, bound through the SQLite API when they are all
    /// text or integers (the reads that every request makes): GRDB's `StatementArguments`, made from the binds and then
    /// validated and bound, were about 0.9 µs of each such read in the session check's profile. Any other bind goes
    /// through GRDB as before.
    private static func read(
        _ sql: String,
        _ binds: [any Encodable & Sendable],
        on database: Database,
        _ onRow: (any SQLRow) -> Void
    ) throws {
        let statement = try database.cachedStatement(sql: sql)
        if !(try bindTextAndIntegers(binds, to: statement, on: database)) {
            try statement.setArguments(try arguments(binds))
        }
        try step(statement, sql, on: database, onRow)
    }

    /// Binds `binds` to `statement` through the SQLite API when each is a `String`, `Int` or `Int64`; `false`, having
    /// bound nothing, when one is not.
    ///
    /// GRDB's own record of the statement's arguments is then stale. That is harmless as long as every use of a cached
    /// statement binds all of its parameters first, as GRDB's `setArguments` and this function do: never run a cached
    /// statement through GRDB without arguments after this.
    private static func bindTextAndIntegers(
        _ binds: [any Encodable & Sendable],
        to statement: Statement,
        on database: Database
    ) throws -> Bool {
        let raw = statement.sqliteStatement
        guard binds.allSatisfy({ $0 is String || $0 is Int || $0 is Int64 }) else { return false }
        guard Int(sqlite3_bind_parameter_count(raw)) == binds.count else {
            throw DatabaseError(
                resultCode: .SQLITE_MISUSE,
                message: "\(binds.count) values for \(sqlite3_bind_parameter_count(raw)) parameters",
                sql: statement.sql
            )
        }
        sqlite3_reset(raw)
        for (offset, bind) in binds.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch bind {
            case let text as String:
                code = sqlite3_bind_text(raw, index, text, -1, transient)
            case let number as Int:
                code = sqlite3_bind_int64(raw, index, Int64(number))
            case let number as Int64:
                code = sqlite3_bind_int64(raw, index, number)
            default:
                code = SQLITE_MISUSE
            }
            guard code == SQLITE_OK else {
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code),
                    message: String(cString: sqlite3_errmsg(database.sqliteConnection)),
                    sql: statement.sql
                )
            }
        }
        return true
    }

    /// SQLite copies a bound text before the call returns.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    /// Steps a read whose arguments are bound, copying each row's values.
    private static func step(
        _ statement: Statement,
        _ sql: String,
        on database: Database,
        _ onRow: (any SQLRow) -> Void
    ) throws {
        let columns = statement.columnNames
        let raw = statement.sqliteStatement
        // Reset when done, which ends the read transaction at once.
        defer { sqlite3_reset(raw) }
        let count = sqlite3_column_count(raw)
        while true {
            let code = sqlite3_step(raw)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else {
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code),
                    message: String(cString: sqlite3_errmsg(database.sqliteConnection)),
                    sql: sql
                )
            }
            var values: [DatabaseValue] = []
            values.reserveCapacity(Int(count))
            for index in 0..<count { values.append(DatabaseValue(sqliteStatement: raw, index: index)) }
            onRow(GRDBSQLRow(columns: columns, values: values))
        }
    }

    private static func run(
        _ sql: String,
        _ arguments: StatementArguments,
        on database: Database,
        _ onRow: @Sendable (any SQLRow) -> Void
    ) throws {
        let statement = try database.cachedStatement(sql: sql)
        let columns = statement.columnNames
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() {
            onRow(GRDBSQLRow(columns: columns, row: row))
        }
    }

    private static func arguments(_ binds: [any Encodable & Sendable]) throws -> StatementArguments {
        // Existentials, not `[DatabaseValue]`: GRDB maps a typed sequence through a key path made anew on each call,
        // which showed at 1.5 % of the server's CPU under notification ingest in a `perf` profile.
        var values: [(any DatabaseValueConvertible)?] = []
        values.reserveCapacity(binds.count)
        for bind in binds {
            // The types Orchard binds, without the dynamic cast `DatabaseValue(value:)` makes (it showed in profiles).
            switch bind {
            case let text as String:
                values.append(text)
                continue
            case let number as Int:
                values.append(number)
                continue
            case let number as Int64:
                values.append(number)
                continue
            default:
                break
            }
            guard let value = DatabaseValue(value: bind) else {
                throw StoreError.unavailable("cannot bind a \(type(of: bind)) to an SQLite statement")
            }
            values.append(value)
        }
        return StatementArguments(values)
    }

    /// SQLite's "cannot work right now" errors (locked, full, unreadable) as ``Accounts/StoreError/unavailable(_:)``;
    /// anything else as it is.
    static func mapped(_ error: any Error) -> any Error {
        guard let error = error as? DatabaseError else { return error }
        switch error.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_IOERR, .SQLITE_FULL, .SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_NOMEM,
            .SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_INTERRUPT, .SQLITE_PROTOCOL:
            return StoreError.unavailable("SQLite: \(error.resultCode) \(error.message ?? "")")
        default:
            return error
        }
    }
}
