import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

/// The pages name only commands and routes that exist: every `orchard …` command the documentation shows is one
/// `orchard --help` lists, and every `METHOD /path` it names is served (on the public or the operator listener).
@Suite("The documentation names only commands and routes that exist", .backendIndependent)
struct DocumentedInterfaceTests {
    /// Every Markdown page users read: the README, docs/, deploy/ and OrchardKit's.
    static func pages() throws -> [(name: String, text: String)] {
        try DocumentationTests.files(withExtensions: ["md"])
            .filter { !$0.path.contains("/Benchmarks/") && !$0.path.contains("/Fuzzing/") }
            .map { ($0.path.replacingOccurrences(of: DocumentationTests.root.path + "/", with: ""), try String(contentsOf: $0, encoding: .utf8)) }
    }

    /// The code spans and code-block lines of a page.
    static func code(_ text: String) -> [String] {
        var found: [String] = []
        var inBlock = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                inBlock.toggle()
                continue
            }
            if inBlock {
                found.append(String(line))
                continue
            }
            let parts = line.split(separator: "`", omittingEmptySubsequences: false)
            for (index, part) in parts.enumerated() where index % 2 == 1 { found.append(String(part)) }
        }
        return found
    }

    /// The subcommands `orchard [path] --help` lists.
    static func subcommands(_ path: [String]) async throws -> Set<String> {
        let help = try await OrchardProcess.runInBackground(path + ["--help"])
        guard help.status == 0 else { return [] }
        var names: Set<String> = []
        var listing = false
        for line in help.standardOutput.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("SUBCOMMANDS:") {
                listing = true
                continue
            }
            if listing, !line.hasPrefix(" ") { listing = false }
            // An entry is indented two spaces; its description's continuation lines, further.
            if listing, line.hasPrefix("  "), !line.hasPrefix("   "), let name = line.split(separator: " ").first { names.insert(String(name)) }
        }
        return names
    }

    @Test("every orchard command the pages show is a command orchard has")
    func commands() async throws {
        // ArgumentParser's `help` is a command of every tool, though `--help` does not list it.
        let top = try await Self.subcommands([]).union(["help"])
        #expect(top.contains("serve") && top.contains("operators"))
        var groups: [String: Set<String>] = [:]
        var unknown: [String] = []
        var checked = 0
        for page in try Self.pages() {
            for snippet in Self.code(page.text) {
                let words = snippet.split(whereSeparator: { $0 == " " || $0 == "\t" })
                for index in words.indices where words[index] == "orchard" || words[index].hasSuffix("/orchard") {
                    guard index + 1 < words.count else { continue }
                    let command = String(words[index + 1])
                    guard command.first?.isLowercase == true, command.allSatisfy({ $0.isLowercase || $0 == "-" }) else { continue }
                    checked += 1
                    guard top.contains(command) else {
                        unknown.append("\(page.name): orchard \(command)")
                        continue
                    }
                    if groups[command] == nil { groups[command] = try await Self.subcommands([command]) }
                    guard let subcommands = groups[command], !subcommands.isEmpty, index + 2 < words.count else { continue }
                    let sub = String(words[index + 2]).trimmingCharacters(in: CharacterSet(charactersIn: ",.;:)"))
                    guard sub.first?.isLowercase == true, sub.allSatisfy({ $0.isLowercase || $0 == "-" }) else { continue }
                    if !subcommands.contains(sub) { unknown.append("\(page.name): orchard \(command) \(sub)") }
                }
            }
        }
        #expect(checked > 50, "the pages show too few commands for this test to mean anything: \(checked)")
        #expect(unknown.isEmpty, "commands that do not exist:\n\(Set(unknown).sorted().joined(separator: "\n"))")
    }

    @Test("docs/commands.md has an entry for every command and subcommand orchard --help lists")
    func everyCommandHasAnEntry() async throws {
        let headings = try DocumentationTests.text("docs/commands.md").split(separator: "\n").filter { $0.hasPrefix("### ") }
        let top = try await Self.subcommands([])
        #expect(top.count > 10, "orchard --help lists too few commands for this test to mean anything: \(top.sorted())")
        var missing: [String] = []
        for command in top.sorted() {
            let entries = headings.filter { $0.contains("`orchard \(command)") }
            let subcommands = try await Self.subcommands([command])
            if subcommands.isEmpty {
                if entries.isEmpty { missing.append("orchard \(command)") }
                continue
            }
            for sub in subcommands.sorted()
            where !entries.contains(where: { $0.contains("`orchard \(command) \(sub)") || $0.contains("/ `\(sub)") }) {
                missing.append("orchard \(command) \(sub)")
            }
        }
        #expect(missing.isEmpty, "commands without an entry in docs/commands.md: \(missing)")
    }

    @Test("docs/problem-codes.md says what a client does for every problem code")
    func everyProblemCodeHasAnEntry() throws {
        let rows = try DocumentationTests.text("docs/problem-codes.md").split(separator: "\n").filter { $0.hasPrefix("| `") }
        let missing = ProblemCode.allCases.map(\.rawValue).filter { code in !rows.contains { $0.hasPrefix("| `\(code)`") } }
        #expect(missing.isEmpty, "problem codes without a row in docs/problem-codes.md: \(missing)")
    }

    @Test("every METHOD /path the pages name is served by Orchard, on the public or the operator listener")
    func routes() async throws {
        var named: Set<String> = []
        let pattern = try NSRegularExpression(pattern: #"\b(GET|POST|PUT|PATCH|DELETE) (/[A-Za-z0-9_{}/.\-]*)"#)
        for page in try Self.pages() {
            // A line about `405 method_not_allowed` names a method a path does not answer, on purpose.
            let lines = page.text.split(separator: "\n").filter { !$0.contains("method_not_allowed") }.joined(separator: "\n")
            let text = lines as NSString
            for match in pattern.matches(in: lines, range: NSRange(location: 0, length: text.length)) {
                named.insert("\(text.substring(with: match.range(at: 1))) \(text.substring(with: match.range(at: 2)))")
            }
        }
        // Apple's endpoints and the emulator's control API are not Orchard's.
        let orchards = named.filter { entry in
            let path = entry.split(separator: " ")[1]
            return !path.hasPrefix("/auth/") && !path.hasPrefix("/_emulator") && path != "/"
        }
        #expect(orchards.count > 20, "too few routes named for this test to mean anything")
        let adminPort = try await ServeProcess.freePort()
        try await OrchardHarness.with(
            configure: {
                $0.listener.adminPort = adminPort
                $0.webFlow.redirectURI = URL(string: "https://orchard.example.com/v1/auth/apple/callback")
            },
            { h in
                var missing: [String] = []
                for entry in orchards.sorted() {
                    let parts = entry.split(separator: " ")
                    let path = parts[1].split(separator: "/", omittingEmptySubsequences: false).map { $0.hasPrefix("{") ? "x" : String($0) }.joined(
                        separator: "/"
                    )
                    let base = path.hasPrefix("/admin") ? "http://127.0.0.1:\(adminPort)" : h.baseURL
                    let response = try await h.request(HTTPMethod(rawValue: String(parts[0])), base + path)
                    let unserved = response.status == 405 || (response.status == 404 && response["detail"] == "no such endpoint")
                    if unserved { missing.append("\(entry) (\(response.status))") }
                }
                #expect(missing.isEmpty, "routes the pages name that Orchard does not serve:\n\(missing.joined(separator: "\n"))")
            }
        )
    }
}
