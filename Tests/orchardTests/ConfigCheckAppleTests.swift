import AppleIDEmulator
import Foundation
import OrchardTesting
import Testing

/// `orchard config check --apple` against the emulator standing in for Apple: what a deployment learns before its first
/// user does.
@Suite("config check --apple", .backendIndependent)
struct ConfigCheckAppleTests {
    static func check(_ setup: ServeProcessTests.Setup, _ changes: [String: String] = [:]) async throws -> OrchardProcess.Result {
        try await OrchardProcess.runInBackground(
            ["config", "check", "--apple"],
            environment: setup.environment.merging(changes) { $1 },
            timeout: 120
        )
    }

    @Test("the team, key and client id Apple accepts: one accepted line per client id, Apple's keys fetched, exit 0")
    func accepted() async throws {
        let setup = try await ServeProcessTests.Setup.start()
        defer { Task { await setup.stop() } }
        let result = try await Self.check(setup)
        #expect(result.status == 0, "\(result.standardOutput)\(result.standardError)")
        #expect(result.standardOutput.contains("apple: com.example.orchard.app: accepted (team TEAMID1234, key KEYID12345)"))
        #expect(result.standardOutput.contains("apple: keys: fetched"))
        // The question reached Apple as a code exchange that could not succeed, and nothing else did.
        let calls = setup.emulator.calls(to: .token)
        #expect(calls.count == 1)
        #expect(calls.first?.grantType == "authorization_code")
        #expect(calls.first?.status == 400)
    }

    @Test("a wrong key id is refused, naming the client id and the likely causes: exit 1")
    func wrongKeyID() async throws {
        let setup = try await ServeProcessTests.Setup.start()
        defer { Task { await setup.stop() } }
        let result = try await Self.check(setup, ["APPLE_KEY_ID": "WRONGKEY99"])
        #expect(result.status == 1)
        #expect(result.standardOutput.contains("apple: com.example.orchard.app: REFUSED"), "\(result.standardOutput)")
        #expect(result.standardOutput.contains("APPLE_KEY_ID is not this key's id"))
        #expect(result.standardError.contains("Apple does not accept every client id"))
    }

    @Test("a client id of another team is refused as invalid_client, naming the grouping among the causes, while the team's own is accepted: exit 1")
    func otherTeamsClientID() async throws {
        // Apple knows com.other.team.app as another team's (its own key); this installation signs for it with its team's.
        let otherKey = AppleEmulatorConfiguration.makeClientKey()
        let other = EmulatorTeam(
            teamID: "OTHERTEAM1",
            keyID: "OTHERKEY01",
            clientPublicKeyPEM: otherKey.publicKeyPEM,
            clientIDs: ["com.other.team.app"]
        )
        let setup = try await ServeProcessTests.Setup.start(otherTeams: [other])
        defer { Task { await setup.stop() } }
        let result = try await Self.check(setup, ["APPLE_CLIENT_IDS": "com.example.orchard.app,com.other.team.app"])
        #expect(result.status == 1)
        #expect(result.standardOutput.contains("apple: com.example.orchard.app: accepted"), "\(result.standardOutput)")
        #expect(result.standardOutput.contains("apple: com.other.team.app: REFUSED (invalid_client)"))
        #expect(result.standardOutput.contains("the client id is not grouped with the key's primary App ID"))
        // Apple saw both questions, each with a client secret of this installation's team.
        #expect(setup.emulator.calls(to: .token).compactMap(\.status).sorted() == [400, 400])
    }

    @Test("a web client id is asked as the web flow asks, with APPLE_REDIRECT_URI; accepted: exit 0")
    func webClientID() async throws {
        let setup = try await ServeProcessTests.Setup.start()
        defer { Task { await setup.stop() } }
        let result = try await Self.check(
            setup,
            ["APPLE_WEB_CLIENT_ID": "com.example.orchard.app", "APPLE_REDIRECT_URI": "https://auth.example.com/auth/apple/callback"]
        )
        #expect(result.status == 0, "\(result.standardOutput)\(result.standardError)")
        #expect(setup.emulator.calls(to: .token).first?.redirectURI == "https://auth.example.com/auth/apple/callback")
    }

    @Test("Apple unreachable: each client id says it cannot tell, exit 1, and the settings were still printed")
    func unreachable() async throws {
        let setup = try await ServeProcessTests.Setup.start()
        defer { Task { await setup.stop() } }
        let port = try await ServeProcess.freePort()
        let result = try await Self.check(setup, ["APPLE_BASE_URL": "http://127.0.0.1:\(port)"])
        #expect(result.status == 1)
        #expect(result.standardOutput.contains("apple: com.example.orchard.app: cannot tell: Apple cannot be reached"), "\(result.standardOutput)")
        #expect(result.standardOutput.contains("apple: keys: cannot be fetched"))
        #expect(result.standardOutput.contains("APPLE_TEAM_ID=TEAMID1234"))
    }
}
