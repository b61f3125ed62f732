import Logging
import NIOCore
import PostgresKit
import PostgresNIO
import SQLKit
import Synchronization

/// SQLKit over one PostgreSQL connection, where every statement with parameters is a named prepared statement of
/// that connection: parsed and planned once per connection, then one round trip (Bind, Execute, Sync) each time.
/// postgres-kit sends every statement unnamed, parsed anew each time.
///
/// postgres-nio keeps the prepared statements of each connection by name (`PostgresPreparedStatement`, whose name and
/// text are static); ``NamedStatement`` gives them per call, from a task-local that `execute` reads before it
/// returns. A statement's name stands for its text and its parameters' Swift types (a `NULL` leaves the type to the
/// server, so a statement first prepared with one is another statement). `Benchmarks/run --start-postgres` measures it.
///
/// Through a transaction-pooling proxy (`ORCHARD_DATABASE_POOLER=transaction`) a connection's statements reach a
/// different server connection in each transaction, where a name prepared elsewhere does not exist: there every
/// statement is sent unnamed (`namesStatements` false).
struct PreparedSQLDatabase: SQLDatabase {
    /// The leased connection.
    let connection: PostgresConnection
    /// Whether statements with parameters are prepared by name.
    let namesStatements: Bool

    var logger: Logger { connection.logger }
    var eventLoop: any EventLoop { connection.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { nil }
    var dialect: any SQLDialect { PostgresDialect() }
    /// Queries are never logged: their parameters may be personal data (the contract's "Logs").
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        promise.completeWithTask { try await self.execute(sql: query, onRow) }
        return promise.futureResult
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        let (sql, binds) = serialize(query)
        try connection.ensureOpen()
        guard !binds.isEmpty else {
            // BEGIN, COMMIT, SET LOCAL and the like: no plan to keep.
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger) {
                onRow(PostgresSQLRow(row))
            }
            return
        }
        var bindings = PostgresBindings(capacity: binds.count)
        var types: [String] = []
        types.reserveCapacity(binds.count)
        for bind in binds {
            if let value = bind as? any PostgresThrowingDynamicTypeEncodable {
                try bindings.append(value)
                types.append(String(describing: type(of: value)))
            } else {
                // A `nil` optional: the only Encodable the stores bind that is not one of PostgreSQL's types.
                bindings.appendNull()
                types.append("NULL")
            }
        }
        guard namesStatements, binds.count <= Self.mostPreparedParameters else {
            // Unnamed: through a transaction-pooling proxy; or a batch's statement, whose parsing is spread over its rows
            // (a name per list length would keep up to a batch's size of plans on every connection).
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger) {
                onRow(PostgresSQLRow(row))
            }
            return
        }
        let text = NamedStatement.Text(name: StatementNames.shared.name(sql: sql, types: types), sql: sql)
        try await NamedStatement.$text.withValue(text) {
            do {
                for try await row in try await connection.execute(NamedStatement(bindings: bindings), logger: logger) {
                    onRow(PostgresSQLRow(row))
                }
            } catch let error as PSQLError where Self.poisonsConnection(error) {
                // postgres-nio keeps a failed preparation for good on its connection, and PostgreSQL refuses a cached
                // plan whose result changed under it: this connection cannot run the statement again, so it is
                // closed and the pool opens another.
                connection.close().whenComplete { _ in }
                throw error
            }
        }
    }

    /// Statements with more parameters than this run unnamed (Parse, Bind, Execute each time).
    static let mostPreparedParameters = 32

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await closure(self)
    }

    /// Whether `error` leaves a statement unusable on its connection: a statement PostgreSQL cannot prepare
    /// (class 42: a table or column that does not exist yet), a cached plan it refuses (0A000), or an unknown statement
    /// name (26000).
    static func poisonsConnection(_ error: PSQLError) -> Bool {
        guard case .server = error.code, let state = error.serverInfo?[.sqlState] else { return false }
        return state.hasPrefix("42") || state == "0A000" || state == "26000"
    }
}

/// One prepared statement of any text: postgres-nio reads ``name`` and ``sql`` while `execute` runs, from ``text``.
struct NamedStatement: PostgresPreparedStatement {
    /// A statement's name and text.
    struct Text: Sendable {
        let name: String
        let sql: String
    }

    /// The statement `execute` is preparing or running in this task.
    @TaskLocal static var text = Text(name: "", sql: "")

    static var name: String { text.name }
    static var sql: String { text.sql }

    typealias Row = PostgresRow

    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

/// Short names for statements, the same in every connection of the process: `o1`, `o2`, ... by text and parameter
/// types. The stores' statements are a fixed set (their texts differ only in the count of a list's parameters, and
/// those with more than ``PreparedSQLDatabase/mostPreparedParameters`` are not named), so the table stays small.
final class StatementNames: Sendable {
    static let shared = StatementNames()

    private let names = Mutex<[String: String]>([:])

    func name(sql: String, types: [String]) -> String {
        let key = types.joined(separator: ",") + "|" + sql
        return names.withLock { names in
            if let name = names[key] { return name }
            let name = "o\(names.count + 1)"
            names[key] = name
            return name
        }
    }
}
