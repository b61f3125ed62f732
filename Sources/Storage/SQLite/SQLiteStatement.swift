import Accounts
import Foundation
import GRDB
import GRDBSQLite
import SQLKit

/// How Orchard runs one SQL statement on an SQLite connection, reads and writes alike: GRDB's cached statement, SQLKit's
/// binds bound through the SQLite API, stepped through the SQLite API, each row's values copied into a ``GRDBSQLRow``.
///
/// Not GRDB's own path (its `StatementArguments`, then a `Row` cursor over the statement), which costs more per bind
/// and per row; `Benchmarks/run`'s session check and never-issued-nonce figures guard this.
enum SQLiteStatement {
    /// Runs `sql` with `binds` on `database`, calling `onRow` for each row it returns.
    static func run(
        _ sql: String,
        _ binds: [any Encodable & Sendable],
        on database: Database,
        _ onRow: (any SQLRow) -> Void
    ) throws {
        let statement = try database.cachedStatement(sql: sql)
        let raw = statement.sqliteStatement
        // Reset when done, which ends a read's transaction at once and leaves the cached statement ready for the next.
        defer { sqlite3_reset(raw) }
        sqlite3_reset(raw)
        try bind(binds, to: statement, on: database)
        let columns = statement.columnNames
        let count = sqlite3_column_count(raw)
        while true {
            let code = sqlite3_step(raw)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw failure(code, sql: sql, on: database) }
            var values: [DatabaseValue] = []
            values.reserveCapacity(Int(count))
            for index in 0..<count { values.append(DatabaseValue(sqliteStatement: raw, index: index)) }
            onRow(GRDBSQLRow(columns: columns, values: values))
        }
    }

    /// Binds every parameter of `statement`: text and integers directly (the binds of every request), anything else
    /// through GRDB's conversion to a database value (NULL for `nil`).
    ///
    /// GRDB's own record of the statement's arguments is not kept: never run a cached statement through GRDB's
    /// execution after this (every statement of Orchard's runs through ``run(_:_:on:_:)``).
    private static func bind(_ binds: [any Encodable & Sendable], to statement: Statement, on database: Database) throws {
        let raw = statement.sqliteStatement
        guard Int(sqlite3_bind_parameter_count(raw)) == binds.count else {
            throw DatabaseError(
                resultCode: .SQLITE_MISUSE,
                message: "\(binds.count) values for \(sqlite3_bind_parameter_count(raw)) parameters",
                sql: statement.sql
            )
        }
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
                guard let value = DatabaseValue(value: bind) else {
                    throw StoreError.unavailable("cannot bind a \(type(of: bind)) to an SQLite statement")
                }
                switch value.storage {
                case .null: code = sqlite3_bind_null(raw, index)
                case .int64(let number): code = sqlite3_bind_int64(raw, index, number)
                case .double(let number): code = sqlite3_bind_double(raw, index, number)
                case .string(let text): code = sqlite3_bind_text(raw, index, text, -1, transient)
                case .blob(let data):
                    code = data.withUnsafeBytes { bytes in
                        sqlite3_bind_blob(raw, index, bytes.baseAddress, Int32(bytes.count), transient)
                    }
                }
            }
            guard code == SQLITE_OK else { throw failure(code, sql: statement.sql, on: database) }
        }
    }

    /// SQLite copies a bound text or blob before the call returns.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    private static func failure(_ code: Int32, sql: String, on database: Database) -> DatabaseError {
        failure(code, sql: sql, on: database.sqliteConnection)
    }

    /// GRDB's error for a result code of SQLite's API on `connection`, with SQLite's message and the statement: the one
    /// place a call through the SQLite API (here, and ``SQLiteChangeWatch``'s looks) turns a code into an error.
    static func failure(_ code: Int32, sql: String, on connection: OpaquePointer?) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(connection)), sql: sql)
    }
}
