import Foundation
import OrchardServer
import Testing

/// The configuration reference cannot drift from the code: every setting the loader and the components read is in the table of
/// docs/configuration.md ("Settings"), every setting the table names is read, and `orchard config check` shows each of them.
@Suite("The documented settings are the settings read", .backendIndependent)
struct DocumentedSettingsTests {
    static func names(in text: some StringProtocol, quote: Character) -> Set<String> {
        var names: Set<String> = []
        var rest = Substring(text)
        while let start = rest.firstIndex(of: quote) {
            let after = rest[rest.index(after: start)...]
            guard let end = after.firstIndex(of: quote) else { break }
            let candidate = after[..<end]
            if candidate.hasPrefix("ORCHARD_") || candidate.hasPrefix("APPLE_"),
                candidate.allSatisfy({ $0.isUppercase || $0 == "_" || $0.isNumber })
            {
                names.insert(String(candidate))
            }
            rest = after[after.index(after: end)...]
        }
        return names
    }

    @Test("docs/configuration.md's settings table, the loader's reads and config check's lines name the same settings")
    func sameSettings() throws {
        let root = BrowserTests.root
        let readme = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "\n## ").first { $0.hasPrefix("Settings") })
        let tableRows = section.split(separator: "\n").filter { $0.hasPrefix("| `") }
        let documented = Self.names(in: tableRows.map { $0.split(separator: "|").first ?? "" }.joined(separator: " "), quote: "`")

        // The loader and each component's init(reader:): every file of the folder but config check's, the file
        // provider's list of secrets, and the error type.
        let folder = root.appendingPathComponent("Sources/OrchardServer/Configuration")
        let notReaders: Set<String> = ["OrchardConfiguration+Check.swift", "ConfigurationFile.swift", "ConfigurationError.swift"]
        let readers = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".swift") && !notReaders.contains($0) }
        #expect(readers.count >= 7, "\(readers)")
        let loader = try readers.map { try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8) }.joined()
        let read = Self.names(in: loader, quote: "\"")
        #expect(!read.isEmpty)
        #expect(read.subtracting(documented).isEmpty, "read but not documented: \(read.subtracting(documented).sorted())")
        #expect(documented.subtracting(read).isEmpty, "documented but not read: \(documented.subtracting(read).sorted())")

        // config check shows every one (ORCHARD_CONFIG_FILE only when it is set, as it names the file itself).
        let shown = Set(OrchardConfiguration().effectiveSettings.map(\.name)).union(["ORCHARD_CONFIG_FILE"])
        #expect(shown == read, "config check: \(shown.symmetricDifference(read).sorted())")
    }
}
