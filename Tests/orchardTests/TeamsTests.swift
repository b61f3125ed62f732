import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import OrchardTesting
import Testing

@Suite("Several Apple teams in one installation: apple.teams, each call signed by its client id's team", .backendIndependent)
struct TeamsTests {
    static let appA = "com.example.team-a.app"
    static let appB = "com.example.team-b.app"

    /// Two teams with keys of their own, an emulator that knows both, and the configuration file naming both.
    struct TwoTeams {
        let emulator: AppleEmulator
        let running: RunningEmulator
        let directory: TemporaryDirectory
        let http: HTTPClient
        let environment: [String: String]
        let teams: [[String: any Sendable]]

        static func start(fileExtension: String = "json") async throws -> TwoTeams {
            let keyA = AppleEmulatorConfiguration.makeClientKey()
            let keyB = AppleEmulatorConfiguration.makeClientKey()
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let emulator = try AppleEmulator(
                configuration: AppleEmulatorConfiguration(
                    teamID: "TEAMAAAAAA",
                    keyID: "KEYAAAAAAA",
                    clientIDs: [appA],
                    clientPublicKeyPEM: keyA.publicKeyPEM,
                    otherTeams: [
                        EmulatorTeam(teamID: "TEAMBBBBBB", keyID: "KEYBBBBBBB", clientPublicKeyPEM: keyB.publicKeyPEM, clientIDs: [appB])
                    ]
                ),
                httpClient: http
            )
            let running = try await emulator.start()
            let directory = try TemporaryDirectory()
            try keyA.privateKeyPEM.write(toFile: directory.file("a.p8"), atomically: true, encoding: .utf8)
            try keyB.privateKeyPEM.write(toFile: directory.file("b.p8"), atomically: true, encoding: .utf8)
            let teams: [[String: any Sendable]] = [
                ["team_id": "TEAMAAAAAA", "key_id": "KEYAAAAAAA", "private_key_file": directory.file("a.p8"), "client_ids": [appA]],
                ["team_id": "TEAMBBBBBB", "key_id": "KEYBBBBBBB", "private_key_file": directory.file("b.p8"), "client_ids": [appB]],
            ]
            let file = directory.file("orchard.\(fileExtension)")
            try write(["apple": ["teams": teams]], to: file)
            let environment = [
                "ORCHARD_CONFIG_FILE": file, "APPLE_BASE_URL": running.baseURL,
                "ORCHARD_VAULT_KEYS": "k1:\(Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString())",
                "ORCHARD_DATABASE_URL": "sqlite:\(directory.file("orchard.sqlite"))", "ORCHARD_LOG_LEVEL": "info",
            ]
            return TwoTeams(emulator: emulator, running: running, directory: directory, http: http, environment: environment, teams: teams)
        }

        /// Writes `object` as JSON, or as YAML (JSON is YAML) for a `.yaml` path with a YAML-only comment first.
        static func write(_ object: [String: any Sendable], to path: String) throws {
            let json = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted]), as: UTF8.self)
            let text = path.hasSuffix(".yaml") ? "# Orchard's settings\n" + json : json
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        }

        func stop() async {
            await running.stop()
            try? await http.shutdown()
            directory.remove()
        }
    }

    @Test("users of both teams' apps sign in and delete their accounts; each exchange and revocation carries its team's secret")
    func bothTeamsThroughTheAPI() async throws {
        let setup = try await TwoTeams.start()
        defer { Task { await setup.stop() } }
        let serve = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.directory.path, http: setup.http)
        let client = OrchardClient(baseURL: serve.baseURL, http: setup.http, emulator: setup.emulator)

        var tokens: [String: String] = [:]
        for app in [Self.appA, Self.appB] {
            let signIn = try await client.signIn(setup.emulator.makeUser(), clientID: app).response
            #expect(signIn.status == 200, "\(app): \(String(decoding: signIn.body, as: UTF8.self)) \(serve.logText)")
            tokens[app] = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
        }
        // The emulator accepts a client secret only from the team that owns the client id: both exchanges succeeded.
        let exchanges = setup.emulator.calls(to: .token)
        #expect(exchanges.count == 2)
        #expect(exchanges.allSatisfy { $0.status == 200 }, "\(exchanges.map { ($0.clientID ?? "", $0.error ?? "") })")
        #expect(Set(exchanges.compactMap(\.clientID)) == [Self.appA, Self.appB])

        for app in [Self.appA, Self.appB] {
            let deletion = try await client.request(.DELETE, "/v1/account", bearer: tokens[app])
            #expect(deletion.status == 200)
            #expect(deletion["apple_revocation"] == "revoked", "\(app): \(String(decoding: deletion.body, as: UTF8.self))")
        }
        let revocations = setup.emulator.calls(to: .revoke)
        #expect(revocations.count == 2 && revocations.allSatisfy { $0.status == 200 })
        #expect(Set(revocations.compactMap(\.clientID)) == [Self.appA, Self.appB])

        // A notification for team B's app verifies and routes by its audience: Apple's account-delete ends the session.
        let user = setup.emulator.makeUser()
        let signIn = try await client.signIn(user, clientID: Self.appB).response
        let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
        let payload = try setup.emulator.signNotification(type: "account-delete", sub: user.sub, clientID: Self.appB)
        let status = try await setup.emulator.sendNotification(payload: payload, to: serve.baseURL + "/v1/apple/notifications")
        #expect(status == 200)
        let ended = try await eventually {
            try await client.request(.GET, "/v1/session", bearer: token).status == 401
        }
        #expect(ended, "\(serve.logText)")
        #expect(await serve.terminate() == 0)
    }

    @Test("config check shows each team, from the file, with its key redacted; YAML reads the same")
    func configCheckShowsTeams() async throws {
        let setup = try await TwoTeams.start(fileExtension: "yaml")
        defer { Task { await setup.stop() } }
        let check = try await OrchardProcess.runInBackground(["config", "check"], environment: setup.environment)
        #expect(check.status == 0, "\(check.standardOutput)\(check.standardError)")
        #expect(check.standardOutput.contains("apple.teams[0]"))
        #expect(check.standardOutput.contains("team_id=TEAMBBBBBB key_id=KEYBBBBBBB private_key_file=<redacted> client_ids=\(Self.appB)"))
        #expect(!check.standardOutput.contains("PRIVATE KEY"))
        #expect(!check.standardOutput.contains(setup.directory.file("b.p8")))
    }

    @Test("both forms, a client id in two teams, a team without client ids: configuration errors naming the setting, exit 2")
    func teamConfigurationErrors() async throws {
        let setup = try await TwoTeams.start()
        defer { Task { await setup.stop() } }
        let file = setup.directory.file("bad.json")
        var environment = setup.environment
        environment["ORCHARD_CONFIG_FILE"] = file

        func check(_ object: [String: any Sendable], extra: [String: String] = [:]) async throws -> OrchardProcess.Result {
            try TwoTeams.write(object, to: file)
            return try await OrchardProcess.runInBackground(["serve"], environment: environment.merging(extra) { $1 })
        }

        let both = try await check(["apple": ["teams": setup.teams]], extra: ["APPLE_TEAM_ID": "TEAMAAAAAA"])
        #expect(both.status == 2)
        #expect(both.standardError.contains("apple.teams") && both.standardError.contains("APPLE_TEAM_ID"), "\(both.standardError)")

        var twice = setup.teams
        twice[1]["client_ids"] = [Self.appB, Self.appA]
        let duplicate = try await check(["apple": ["teams": twice]])
        #expect(duplicate.status == 2)
        #expect(duplicate.standardError.contains("apple.teams[1].client_ids"), "\(duplicate.standardError)")

        var empty = setup.teams
        empty[0]["client_ids"] = [String]()
        let none = try await check(["apple": ["teams": empty]])
        #expect(none.status == 2)
        #expect(none.standardError.contains("apple.teams[0].client_ids"), "\(none.standardError)")

        var shortID = setup.teams
        shortID[1]["team_id"] = "SHORT"
        let short = try await check(["apple": ["teams": shortID]])
        #expect(short.status == 2)
        #expect(short.standardError.contains("apple.teams[1].team_id"), "\(short.standardError)")
    }
}
