import SQLKit
public import Storage

extension DatabaseClient {
    /// The `n` of a `SELECT COUNT(*) AS n …` statement, 0 when it returns no row.
    public func count(_ sql: String) async throws -> Int {
        try await withDatabase { db in
            try await db.raw(SQLQueryString(sql)).first()?.decode(column: "n", as: Int.self) ?? 0
        }
    }
}
