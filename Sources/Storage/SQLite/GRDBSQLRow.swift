import Foundation
import GRDB
import SQLKit

/// One row of a GRDB query as an SQLKit row: its column names and values, copied out of the statement.
struct GRDBSQLRow: SQLRow {
    let allColumns: [String]
    let values: [DatabaseValue]

    /// A row of `values` under `columns`.
    init(columns: [String], values: [DatabaseValue]) {
        self.allColumns = columns
        self.values = values
    }

    func contains(column: String) -> Bool {
        allColumns.contains(column)
    }

    func decodeNil(column: String) throws -> Bool {
        try value(column).isNull
    }

    func decode<D: Decodable>(column: String, as type: D.Type) throws -> D {
        let value = try value(column)
        // The types Orchard reads, without the two dynamic casts of the general path below (a conformance lookup and a
        // cast back to `D`); `Benchmarks/run`'s session check guards this. Each case checks that `D` is that very type.
        switch value.storage {
        case .string(let text) where D.self == String.self:
            return unsafeBitCast(text, to: D.self)
        case .int64(let number) where D.self == Int64.self:
            return unsafeBitCast(number, to: D.self)
        case .int64(let number) where D.self == Int.self:
            return unsafeBitCast(Int(number), to: D.self)
        case .int64(let number) where D.self == Bool.self:
            return unsafeBitCast(number != 0, to: D.self)
        default:
            break
        }
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
