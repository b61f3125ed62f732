import Dispatch
import Foundation
import OrchardTesting
import Storage
import Testing

@Suite("The account page in a real browser (headless Chromium, Selenium)")
struct BrowserTests {
    /// The repository's root, from this file's place in it.
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    @Test(
        "sign in, see, delete; a grant revoked at Apple signs out on the next load; sign-out; cancel; pending deletion",
        .timeLimit(.minutes(5))
    )
    func accountPageInChromium() async throws {
        let script = Self.root.appendingPathComponent("Tests/browser/account_page_test.py")
        let output = Self.root.appendingPathComponent("test-output/browser")
        var arguments = [script.path, "--orchard", OrchardProcess.executable.path, "--out", output.path]
        // On the PostgreSQL pass, `orchard serve` uses a fresh database of the test cluster; on SQLite, its own file.
        let database = TestDatabase.selectedBackend == .postgres ? try await TestDatabase.make(.postgres) : nil
        if let database, case .postgres(url: let url) = database.url { arguments += ["--database-url", url] }
        let (status, text) = await Self.python(arguments)
        await database?.remove()
        print(text)
        switch status {
        case 0:
            #expect(text.contains("PASS"))
        case 77:
            // No browser here, and not under CI=true (the script fails there instead): skipped, loudly.
            print("WARNING: the browser tests were SKIPPED (no Chromium, chromedriver or selenium; see scripts/ci-setup)")
        case 127 where ProcessInfo.processInfo.environment["CI"] != "true":
            print("WARNING: the browser tests were SKIPPED: no python3 here (see scripts/ci-setup)")
        default:
            Issue.record("the browser suite failed (exit \(status)); see test-output/browser/:\n\(text)")
        }
    }

    /// Runs `python3 ARGUMENTS` on a thread of its own (it takes a while; the test pool's threads stay free) and
    /// returns its exit status and everything it printed.
    static func python(_ arguments: [String]) async -> (Int32, String) {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = ["python3"] + arguments
                process.currentDirectoryURL = root
                let log = Pipe()
                process.standardOutput = log
                process.standardError = log
                do {
                    try process.run()
                } catch {
                    continuation.resume(returning: (127, "cannot run python3: \(error)"))
                    return
                }
                let text = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                continuation.resume(returning: (process.terminationStatus, text))
            }
        }
    }
}
