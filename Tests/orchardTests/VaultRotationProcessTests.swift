import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import OrchardTesting
import Storage
import Testing

/// `orchard vault rotate` beside a running `serve`, on each backend.
@Suite("orchard vault rotate beside a running server")
struct VaultRotationProcessTests {
    @Test(
        "vault rotate k1 to k2 beside a running server; with k1 removed, sessions, device labels (of sessions and history), accounts, sign-in and a queued revocation still work"
    )
    func vaultRotation() async throws {
        var prepared = try await ServeProcessTests.Setup.start()
        // On the PostgreSQL pass, on a fresh database of the test cluster.
        let database = TestDatabase.selectedBackend == .postgres ? try await TestDatabase.make(.postgres) : nil
        if let database, case .postgres(let url) = database.url { prepared.environment["ORCHARD_DATABASE_URL"] = url }
        let setup = prepared
        defer {
            Task {
                await database?.remove()
                await setup.stop()
            }
        }
        func key() -> String { Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() }
        let k1 = try #require(setup.environment["ORCHARD_VAULT_KEYS"])
        let k2 = "k2:\(key())"
        let first = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.directory.path, http: setup.http)
        var sessions: [String] = []
        var users: [EmulatedUser] = []
        for index in 0..<3 {
            let user = setup.emulator.makeUser()
            users.append(user)
            let signIn = try await setup.client(first).signIn(user, clientID: "com.example.orchard.app", device: "Phone \(index)").response
            sessions.append(try #require((signIn.json["session"] as? [String: Any])?["token"] as? String))
        }
        // The third user's deletion leaves a token queued (sealed under k1) while Apple refuses.
        setup.emulator.injectFailure(endpoint: .revoke, failure: .status(503), count: 1000)
        #expect(try await setup.client(first).request(.DELETE, "/v1/account", bearer: sessions[2])["apple_revocation"] == "pending")
        #expect(await first.terminate() == 0)

        // k2 first, k1 still there to open the old values; rotate beside the running server.
        var both = setup.environment
        both["ORCHARD_VAULT_KEYS"] = "\(k2),\(k1)"
        let second = try await ServeProcess.start(environment: both, logDirectory: setup.directory.path, http: setup.http)
        let before = try await OrchardProcess.runInBackground(["vault", "status"], environment: both)
        #expect(before.status == 0)
        #expect(before.standardOutput.contains("k1\t"), "\(before.standardOutput)")
        let rotated = try await OrchardProcess.runInBackground(["vault", "rotate"], environment: both)
        #expect(rotated.status == 0, "\(rotated.standardOutput)\(rotated.standardError)")
        #expect(rotated.standardOutput.contains("left_under_other_keys: 0"))
        #expect(try await setup.client(second).request(.GET, "/v1/session", bearer: sessions[0]).status == 200)
        // Idempotent: a second run finds nothing to do.
        let again = try await OrchardProcess.runInBackground(["vault", "rotate"], environment: both)
        #expect(again.standardOutput.contains("rotated: 0"), "\(again.standardOutput)")
        #expect(await second.terminate() == 0)

        // k1 removed.
        var only = setup.environment
        only["ORCHARD_VAULT_KEYS"] = k2
        let status = try await OrchardProcess.runInBackground(["vault", "status"], environment: only)
        #expect(status.status == 0, "\(status.standardOutput)")
        #expect(!status.standardOutput.contains("k1\t"))
        setup.emulator.clearFailures()
        let third = try await ServeProcess.start(environment: only, logDirectory: setup.directory.path, http: setup.http)
        let session = try await setup.client(third).request(.GET, "/v1/session", bearer: sessions[1])
        #expect(session.status == 200)
        #expect((session.json["account"] as? [String: Any])?["email"] as? String == users[1].email)
        // Device labels were re-sealed too.
        let listed = try await setup.client(third).request(.GET, "/v1/sessions", bearer: sessions[1])
        #expect((listed.json["sessions"] as? [[String: Any]])?.first?["device"] as? String == "Phone 1", "\(listed.json)")
        // And those of the history's sign-ins.
        let events = try await setup.client(third).request(.GET, "/v1/account/events", bearer: sessions[1])
        #expect((events.json["events"] as? [[String: Any]])?.first?["device"] as? String == "Phone 1", "\(events.json)")
        // The lookup hashes were recomputed: a returning user is found, not made anew.
        let returning = try await setup.client(third).signIn(users[0], clientID: "com.example.orchard.app").response
        #expect(returning.json["is_new_account"] as? Bool == false)
        // The queued token is opened with k2 and revoked.
        #expect(await eventually { setup.emulator.calls(to: .revoke).contains { $0.status == 200 } }, "\(third.logText)")
        #expect(await third.terminate() == 0)

        var wrong = setup.environment
        wrong["ORCHARD_VAULT_KEYS"] = "k3:\(key())"
        let missing = try await OrchardProcess.runInBackground(["vault", "status"], environment: wrong)
        #expect(missing.status == 1)
        #expect(missing.standardOutput.contains("not configured"))
    }
}
