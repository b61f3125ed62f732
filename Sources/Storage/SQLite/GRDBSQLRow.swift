import Foundation
import GRDB
import SQLKit

/// One row of a GRDB query as an SQLKit row: its column names and values, copied out of the statement.
struct GRDBSQLRow: SQLRow {
    let allColumns: [String]
    let values: [DatabaseValue]

    init(columns: [String], row: Row) {
        self.allColumns = columns
        self.values = Array(row.databaseValues)
    }

    func contains(column: String) -> Bool {
        allColumns.contains(column)
    }

    func decodeNil(column: String) throws -> Bool {
        try value(column).isNull
    }

    func decode<D: Decodable>(column: String, as type: D.Type) throws -> D {
        let value = try value(column)
        guard let convertible = D.self as? any DatabaseValueConvertible.Type,
            let decoded = convertible.fromDatabaseValue(value) as? D
        else {
            throw DecodingError.typeMismatch(
                D.self,
                .init(codingPath: [], debugDescription: "column \(column) does not hold a \(D.self)")
            )
        }
        return decoded
    }

    private func value(_ column: String) throws -> DatabaseValue {
        guard let index = allColumns.firstIndex(of: column) else {
            throw DecodingError.keyNotFound(
                SQLCodingKey(stringValue: column),
                .init(codingPath: [], debugDescription: "no column \(column) in \(allColumns)")
            )
        }
        return values[index]
    }
}

/// A coding key for a column name.
private struct SQLCodingKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
