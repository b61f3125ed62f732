import Foundation
import Testing

@testable import Accounts

/// The dates an import reads: RFC 3339 with or without a fraction, and PostgreSQL's text; an impossible date or time is
/// refused, never moved on to a real one.
@Suite struct ImportDecoderDateTests {
    func createdAt(_ text: String) throws(ImportRecordProblem) -> Date? {
        let line = #"{"apple_sub": "001.a", "account_id": "u1", "created_at": "\#(text)"}"#
        return try ImportDecoder().user(Array(line.utf8), source: .orchard).createdAt
    }

    @Test(
        "RFC 3339 and PostgreSQL's text read as the instant they name",
        arguments: [
            ("2024-03-01T12:00:00Z", 1_709_294_400.0),
            ("2024-03-01t12:00:00z", 1_709_294_400.0),
            ("2024-03-01T12:00:00.250Z", 1_709_294_400.25),
            ("2024-03-01T12:00:00.999Z", 1_709_294_400.999),
            ("2024-03-01T14:00:00+02:00", 1_709_294_400.0),
            ("2024-03-01T07:30:00-04:30", 1_709_294_400.0),
            ("2024-03-01 12:00:00.123456+00", 1_709_294_400.123),
            ("2024-03-01 13:00:00+01", 1_709_294_400.0),
        ]
    )
    func readable(_ text: String, _ seconds: Double) throws {
        let date = try #require(try createdAt(text), "\(text)")
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.001, "\(text): \(date.timeIntervalSince1970)")
    }

    @Test(
        "an impossible day or time is refused, not moved on",
        arguments: [
            "2024-02-30T10:00:00Z", "2023-04-31T10:00:00Z", "2023-02-29T10:00:00Z", "2024-03-01T25:00:00Z",
            "2024-03-01T24:00:00Z", "2024-03-01T10:75:00Z", "2024-03-01T10:00:99Z", "2024-13-01T10:00:00Z", "yesterday",
        ]
    )
    func impossible(_ text: String) {
        #expect(throws: ImportRecordProblem(reason: "created_at is not a date"), "\(text)") { try createdAt(text) }
    }
}
