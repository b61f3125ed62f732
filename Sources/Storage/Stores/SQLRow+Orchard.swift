import Foundation
import SQLKit

extension SQLRow {
    /// A millisecond timestamp column as a `Date`, `nil` when NULL.
    func date(_ column: String) throws -> Date? {
        guard try !decodeNil(column: column) else { return nil }
        return Date(milliseconds: try decode(column: column, as: Int64.self))
    }

    /// A non-null text column.
    func string(_ column: String) throws -> String {
        try decode(column: column, as: String.self)
    }

    /// A nullable text column.
    func optionalString(_ column: String) throws -> String? {
        try decodeNil(column: column) ? nil : try decode(column: column, as: String.self)
    }
}

extension Date {
    /// Milliseconds since 1970, as stored.
    var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    init(milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
