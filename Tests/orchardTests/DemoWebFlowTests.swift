import AsyncHTTPClient
import Foundation
import NIOHTTP1
import OrchardTesting
import Synchronization
import Testing

@Suite("orchard demo --serve: the web flow against the demo's emulator", .backendIndependent)
struct DemoWebFlowTests {
    @Test("--serve prints the account page's URL, and a browser's sign-in through the demo's emulator lands on it signed in")
    func demoServesTheWebFlow() async throws {
        let process = Process()
        process.executableURL = OrchardProcess.executable
        process.arguments = ["demo", "--serve"]
        process.environment = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory()]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let printed = PrintedText()
        pipe.fileHandleForReading.readabilityHandler = { handle in
            printed.append(handle.availableData)
        }
        try ChildProcess.start(process)
        defer {
            if process.isRunning { process.interrupt() }
            ChildProcess.endNow(process)
            pipe.fileHandleForReading.readabilityHandler = nil
        }

        let deadline = Date().addingTimeInterval(120)
        // The whole block it prints once serving: its last line's end.
        while !printed.text.contains("(control API under /_emulator/)\n"), Date() < deadline {
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let text = printed.text
        #expect(text.contains("Demo complete."), "\(text)")
        let serving = try #require(text.components(separatedBy: "Serving until Ctrl-C").last)
        let accountLine = try #require(serving.split(separator: "\n").first { $0.contains("account page:") })
        let accountURL = try #require(accountLine.split(separator: " ").first { $0.hasPrefix("http") }.map(String.init))
        #expect(accountURL.hasSuffix("/account"))
        let orchard = String(accountURL.dropLast("/account".count))

        try await WebFlowBrowser.with(orchard: orchard) { browser in
            let start = try await browser.request(.GET, "/v1/auth/apple/authorize")
            #expect(start.status == 302)
            let location = try #require(start.header("Location"))
            #expect(location.hasPrefix("http://localhost:"), "the demo's Apple is another site than Orchard's 127.0.0.1")
            let form = try await browser.visitApple(location)
            #expect(form.action == orchard + "/v1/auth/apple/callback")
            let apple = try #require(URL(string: location))
            let back = try await browser.postForm(form, from: "http://\(apple.host ?? ""):\(apple.port ?? 0)")
            #expect(back.status == 303)
            #expect(back.header("Location") == "/account")
            let page = try await browser.request(.GET, "/account")
            #expect(page.status == 200)
            #expect(String(decoding: page.body, as: UTF8.self).contains("Jane Appleseed"))
        }
        #expect(await ChildProcess.interruptAndWait(process) == 0)
    }
}

/// What a process printed so far, appended from the pipe's handler.
private final class PrintedText: Sendable {
    private let storage = Mutex("")

    var text: String { storage.withLock { $0 } }

    func append(_ data: Data) {
        storage.withLock { $0 += String(decoding: data, as: UTF8.self) }
    }
}
