import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import OrchardTesting
import Testing

extension ServeProcessTests {
    /// A counter's value in `/metrics` text (0 when absent).
    static func counter(_ metrics: String, _ name: String) -> Double {
        metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    @Test("on SQLite serve answers session checks from memory, and ends a remembered session at once, whoever ends it")
    func sqliteMemory() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let serve = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.directory.path, http: setup.http)
        let client = setup.client(serve)

        // Checks answered from memory.
        let signedIn = setup.emulator.makeUser()
        let signIn = try await client.signIn(signedIn, clientID: "com.example.orchard.app").response
        let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
        let id = try #require((signIn.json["account"] as? [String: Any])?["id"] as? String)
        for _ in 0..<5 { #expect(try await client.request(.GET, "/v1/session", bearer: token).status == 200) }
        let metrics = String(decoding: try await client.request(.GET, "/metrics").body, as: UTF8.self)
        #expect(Self.counter(metrics, "orchard_session_cache_hits_total") >= 4, "the memory answered no check")
        #expect(metrics.contains("orchard_session_cache_enabled 1"))

        // A remembered session's answer is kept rendered beside its entry; a change of what the check shows (Apple's
        // email-disabled, processed by serve's job) drops both, so the first check after the change shows it. Waited
        // for through another process's read of the database, never through the check itself, which would see it
        // within the entry's 60 s anyway.
        let first = try await client.request(.GET, "/v1/session", bearer: token)
        #expect((first.json["account"] as? [String: Any])?["email_forwarding"] as? String == "enabled")
        let notification = try setup.emulator.signNotification(type: "email-disabled", sub: signedIn.sub, clientID: "com.example.orchard.app")
        #expect(try await client.request(.POST, "/v1/apple/notifications", json: ["payload": notification]).status == 200)
        let processed = await eventually {
            let shown = try? await OrchardProcess.runInBackground(["accounts", "show", id], environment: setup.environment)
            return shown?.standardOutput.split(separator: "\n").contains { $0.hasPrefix("email_forwarding:") && $0.hasSuffix("disabled") } == true
        }
        #expect(processed, "the notification was not processed: \(serve.logText.suffix(2000))")
        // The first check reads the database; those after it are answered from the new entry and its new memo.
        for check in 1...3 {
            let changed = try await client.request(.GET, "/v1/session", bearer: token)
            #expect((changed.json["account"] as? [String: Any])?["email_forwarding"] as? String == "disabled", "check \(check): \(changed.json)")
        }

        // Checks at once (serve looks for another process's commits on whichever of its watch's connections is free;
        // SQLiteChangeWatchTests holds each connection to it).
        #expect(try await Self.concurrentChecks(client, token: token, count: 16) == Array(repeating: 200, count: 16))

        // An operator's command is another process: its deletion is refused by the very next check, and by every one
        // of a burst after it, whichever connection each looks on.
        let deleted = try await OrchardProcess.runInBackground(["accounts", "delete", id], environment: setup.environment)
        #expect(deleted.status == 0, "\(deleted.standardError)")
        let afterDeletion = try await client.request(.GET, "/v1/session", bearer: token)
        #expect(afterDeletion.status == 401)
        #expect(afterDeletion["reason"] == "account_deleted")
        #expect(try await Self.concurrentChecks(client, token: token, count: 16) == Array(repeating: 401, count: 16))

        // A sign-out through the server, and one of another device's session: refused at once too.
        let user = setup.emulator.makeUser()
        var tokens: [String] = []
        for _ in 0..<2 {
            let answer = try await client.signIn(user, clientID: "com.example.orchard.app").response
            tokens.append(try #require((answer.json["session"] as? [String: Any])?["token"] as? String))
        }
        for token in tokens { for _ in 0..<3 { #expect(try await client.request(.GET, "/v1/session", bearer: token).status == 200) } }
        #expect(try await client.request(.DELETE, "/v1/session", bearer: tokens[0]).status == 204)
        #expect(try await client.request(.GET, "/v1/session", bearer: tokens[0])["reason"] == "signed_out")
        #expect(try await client.request(.GET, "/v1/session", bearer: tokens[1]).status == 200, "the other device's stays")
        #expect(await serve.terminate() == 0)
    }

    @Test("ORCHARD_SESSION_CACHE=off: every check reads the database, and the gauge says so")
    func sqliteMemoryOff() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        var environment = setup.environment
        environment["ORCHARD_SESSION_CACHE"] = "off"
        let serve = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
        let client = setup.client(serve)
        let signIn = try await client.signIn(setup.emulator.makeUser(), clientID: "com.example.orchard.app").response
        let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
        for _ in 0..<5 { #expect(try await client.request(.GET, "/v1/session", bearer: token).status == 200) }
        let metrics = String(decoding: try await client.request(.GET, "/metrics").body, as: UTF8.self)
        #expect(Self.counter(metrics, "orchard_session_cache_hits_total") == 0)
        #expect(metrics.contains("orchard_session_cache_enabled 0"))
        #expect(await serve.terminate() == 0)
    }

    /// The statuses of `count` checks of `token` sent at once.
    static func concurrentChecks(_ client: OrchardClient, token: String, count: Int) async throws -> [Int] {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<count { group.addTask { try await client.request(.GET, "/v1/session", bearer: token).status } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }
}
