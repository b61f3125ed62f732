import Accounts
import Foundation
import GRDB
import Logging
import NIOCore
import NIOPosix
import SQLKit

/// SQLKit's view of Orchard's SQLite file, run by GRDB's connections and ``SQLiteStatement``: on a connection chosen by
/// ``Route``, every statement executes synchronously on the calling thread.
struct GRDBSQLDatabase: SQLDatabase {
    /// Which connection the statements run on.
    enum Route: Sendable {
        /// Outside a transaction: each `SELECT` on the ``SQLiteReader`` (WAL: readers never wait for the writer), each
        /// write as its own group-committed transaction, each `PRAGMA` alone on the writer.
        case autocommit(SQLiteReader, SQLiteWriter)
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
        do {
            switch route {
            case .writer(let pool):
                try Self.onWriter(pool, sql, binds, onRow)
            case .autocommit(let reader, let writer):
                switch SQLiteStatementKind(sql: sql) {
                case .read:
                    for row in try await reader.rows(sql, binds) { onRow(row) }
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

    /// Runs a statement on the writer connection, synchronously on this thread (GRDB's blocking API: its async one would
    /// hop to the writer's dispatch queue and back for every statement).
    private static func onWriter(
        _ pool: DatabasePool,
        _ sql: String,
        _ binds: [any Encodable & Sendable],
        _ onRow: @Sendable (any SQLRow) -> Void
    ) throws {
        try pool.writeWithoutTransaction { try SQLiteStatement.run(sql, binds, on: $0, onRow) }
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
