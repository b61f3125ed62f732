import Dispatch
import Foundation
import OrchardTesting
import Storage
import Testing

/// One browser suite at a time: each starts Chromium and its own emulator and server.
@Suite("The account page and the operator console in a real browser (headless Chromium, Selenium)", .serialized)
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
        try await Self.runPythonSuite(
            "Tests/browser/account_page_test.py",
            output: "test-output/browser",
            name: "the browser tests",
            missing: "no Chromium, chromedriver or selenium"
        )
    }

    @Test(
        "the operator console: log in, find a user by email, end sessions, delete, retry a webhook, read delivery",
        .timeLimit(.minutes(5))
    )
    func operatorConsoleInChromium() async throws {
        try await Self.runPythonSuite(
            "Tests/browser/console_test.py",
            output: "test-output/console",
            name: "the console browser tests",
            missing: "no Chromium, chromedriver or selenium"
        )
    }

    /// Runs a Python suite that starts its own `orchard` processes (on the PostgreSQL pass, against a fresh database
    /// of the test cluster, with `onPostgres` added to its arguments) and checks its verdict: exit 0 with `PASS`; 77
    /// (what it needs is not installed, allowed only outside CI) and a missing python3 outside CI are loud skips;
    /// anything else fails the test.
    static func runPythonSuite(
        _ script: String,
        output: String,
        name: String,
        missing: String,
        onPostgres: [String] = []
    ) async throws {
        var arguments = [
            root.appendingPathComponent(script).path, "--orchard", OrchardProcess.executable.path,
            "--out", root.appendingPathComponent(output).path,
        ]
        let database = TestDatabase.selectedBackend == .postgres ? try await TestDatabase.make(.postgres) : nil
        if let database, case .postgres(url: let url) = database.url { arguments += ["--database-url", url] + onPostgres }
        let (status, text) = await python(arguments)
        await database?.remove()
        print(text)
        switch status {
        case 0:
            #expect(text.contains("PASS"))
        case 77:
            print("WARNING: \(name) were SKIPPED (\(missing); see scripts/ci-setup)")
        case 127 where ProcessInfo.processInfo.environment["CI"] != "true":
            print("WARNING: \(name) were SKIPPED: no python3 here (see scripts/ci-setup)")
        default:
            Issue.record("\(name) failed (exit \(status)); see \(output)/:\n\(text)")
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
                    try ChildProcess.start(process)
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
