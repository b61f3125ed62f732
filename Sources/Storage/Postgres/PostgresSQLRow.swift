import PostgresKit
import PostgresNIO
import SQLKit

/// A PostgreSQL row as SQLKit reads it, decoding the column types the stores read (text and integers, and their
/// `NULL`s) with postgres-nio's own decoders for those types, and any other type through postgres-kit's row.
///
/// postgres-kit's row decodes every column through `Decodable` with a coding path and dynamic casts, which was about
/// 6 % of serve's CPU on the session check with the replica memory off (`Benchmarks/run --start-postgres`, "PG GET
/// /v1/session, cache off"); a session row reads about twenty columns.
struct PostgresSQLRow: SQLRow {
    private let row: PostgresRow
    private let columns: PostgresRandomAccessRow

    init(_ row: PostgresRow) {
        self.row = row
        self.columns = row.makeRandomAccess()
    }

    var allColumns: [String] { columns.map(\.columnName) }

    func contains(column: String) -> Bool { columns.contains(column) }

    func decodeNil(column: String) throws -> Bool {
        !columns.contains(column) || columns[column].bytes == nil
    }

    func decode<D: Decodable>(column: String, as type: D.Type) throws -> D {
        guard columns.contains(column) else { return try row.sql().decode(column: column, as: type) }
        let cell = columns[column]
        if D.self == String.self { return try cell.decode(String.self) as! D }
        if D.self == Int.self { return try cell.decode(Int.self) as! D }
        if D.self == Int64.self { return try cell.decode(Int64.self) as! D }
        if D.self == String?.self { return try cell.decode(String?.self) as! D }
        if D.self == Int?.self { return try cell.decode(Int?.self) as! D }
        if D.self == Int64?.self { return try cell.decode(Int64?.self) as! D }
        return try row.sql().decode(column: column, as: type)
    }
}
