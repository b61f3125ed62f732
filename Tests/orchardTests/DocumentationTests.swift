import Accounts
import Foundation
import OrchardServer
import Testing

/// The documentation lives in this repository and follows the code: every route, problem code and webhook event is
/// documented, and no page points at a file that is not here. (`DocumentedSettingsTests` does the same for settings.)
@Suite("The documentation is complete and self-contained", .backendIndependent)
struct DocumentationTests {
    static let root = BrowserTests.root

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every file of the repository of the given extensions, without build products and dependency checkouts.
    static func files(withExtensions extensions: Set<String>) -> [URL] {
        let skipped: Set<String> = [".build", ".git", ".swiftpm", ".corpus", "crashes", "test-output", "__pycache__"]
        var found: [URL] = []
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isDirectoryKey])
        while let url = enumerator?.nextObject() as? URL {
            if skipped.contains(url.lastPathComponent) || url.lastPathComponent.hasPrefix(".build") {
                enumerator?.skipDescendants()
                continue
            }
            if extensions.contains(url.pathExtension) { found.append(url) }
        }
        return found
    }

    @Test("every route of the OpenAPI document is in docs/http-api.md")
    func routes() throws {
        let openAPI = try Self.text("Sources/OrchardServer/Resources/openapi.yaml")
        let paths = openAPI.split(separator: "\n").filter { $0.hasPrefix("  /") && $0.hasSuffix(":") }.map { $0.dropFirst(2).dropLast() }
        #expect(paths.count >= 10)
        let page = try Self.text("docs/http-api.md")
        for path in paths {
            #expect(page.contains(String(path)), "\(path) is not in docs/http-api.md")
        }
    }

    @Test("every problem code is in docs/http-api.md or the OpenAPI document")
    func problemCodes() throws {
        let documented = try Self.text("docs/http-api.md") + Self.text("Sources/OrchardServer/Resources/openapi.yaml")
        for code in ProblemCode.allCases {
            #expect(documented.contains(code.rawValue), "\(code.rawValue) is documented nowhere")
        }
    }

    @Test("every webhook event type Orchard sends is in docs/notifications-and-webhooks.md")
    func webhookEvents() throws {
        let page = try Self.text("docs/notifications-and-webhooks.md")
        for type in WebhookEventType.allCases {
            #expect(page.contains(type.rawValue), "\(type.rawValue) is not in docs/notifications-and-webhooks.md")
        }
    }

    @Test("every relative link of every Markdown page resolves, and nothing points outside the repository")
    func links() throws {
        let pages = Self.files(withExtensions: ["md"])
        #expect(pages.contains { $0.path.hasSuffix("docs/README.md") })
        for page in pages {
            let text = try String(contentsOf: page, encoding: .utf8)
            // Spelled in two parts so that this check is not itself a mention of the folder it forbids.
            #expect(!text.contains("../" + "shared"), "\(page.path) points outside the repository")
            for match in text.matches(of: #/\]\(([^)\s]+)\)/#) {
                let target = String(match.1)
                if target.hasPrefix("http://") || target.hasPrefix("https://") || target.hasPrefix("#") || target.hasPrefix("mailto:") {
                    continue
                }
                let path = String(target.split(separator: "#", maxSplits: 1).first ?? "")
                let resolved = page.deletingLastPathComponent().appendingPathComponent(path).standardizedFileURL
                #expect(resolved.path.hasPrefix(Self.root.standardizedFileURL.path), "\(page.path): \(target) leaves the repository")
                #expect(FileManager.default.fileExists(atPath: resolved.path), "\(page.path): \(target) does not exist")
            }
        }
    }
}
