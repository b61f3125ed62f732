import Foundation
import OrchardTesting
import Testing

/// The statements that end sessions live in one place, `SessionChange`, which only the session memory's owner makes: a
/// statement written elsewhere would end sessions without telling the memory (docs/layout.md, "Ending sessions").
@Suite("One path ends sessions", .backendIndependent)
struct SessionPathTests {
    /// The repository's `Sources` folder.
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    @Test("no source file but Storage/Sessions/SessionChange.swift sets a session's ended_at or deletes sessions by name")
    func endedAtOnlyInSessionChange() throws {
        var offenders: [String] = []
        let files = FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil)
        var scanned = 0
        while let url = files?.nextObject() as? URL {
            guard url.pathExtension == "swift", !url.path.contains("/OrchardTesting/") else { continue }
            scanned += 1
            let text = try String(contentsOf: url, encoding: .utf8)
            let setsEndedAt = text.range(of: #"UPDATE\s+sessions\s+SET[^"]*ended_at\s*="#, options: .regularExpression) != nil
            let deletesSessions = text.range(of: #"DELETE\s+FROM\s+sessions\b"#, options: [.regularExpression, .caseInsensitive]) != nil
            if setsEndedAt || deletesSessions, !url.path.hasSuffix("Storage/Sessions/SessionChange.swift") { offenders.append(url.path) }
        }
        #expect(scanned > 100, "the scan found the sources")
        #expect(offenders.isEmpty, "sessions ended outside SessionChange: \(offenders)")
    }
}
