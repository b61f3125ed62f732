import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OrchardTesting
import Storage
import Testing

@Suite("App transfer (TN3159): two installations, one emulator, export on team A's side, import on team B's")
struct TransferTests {
    static let app = "com.example.moving.app"
    static let teamA = "TEAMAAAAAA"
    static let teamB = "TEAMBBBBBB"

    /// Two installations (team A's on SQLite, team B's on the selected backend) and one emulator playing both teams.
    struct Installations {
        let emulator: AppleEmulator
        let running: RunningEmulator
        let directory: TemporaryDirectory
        let receiver: WebhookReceiver
        let http: HTTPClient
        let databaseB: TestDatabase?
        let sideA: [String: String]
        let sideB: [String: String]

        static func start() async throws -> Installations {
            let keyA = AppleEmulatorConfiguration.makeClientKey()
            let keyB = AppleEmulatorConfiguration.makeClientKey()
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let emulator = try AppleEmulator(
                configuration: AppleEmulatorConfiguration(
                    teamID: teamA,
                    keyID: "KEYAAAAAAA",
                    clientIDs: [app],
                    clientPublicKeyPEM: keyA.publicKeyPEM,
                    otherTeams: [
                        EmulatorTeam(teamID: teamB, keyID: "KEYBBBBBBB", clientPublicKeyPEM: keyB.publicKeyPEM, clientIDs: ["com.example.b.other"])
                    ]
                ),
                httpClient: http
            )
            let running = try await emulator.start()
            let directory = try TemporaryDirectory()
            let receiver = try await WebhookReceiver.start()
            // Team B's database is the selected backend's: a fresh PostgreSQL database on the PostgreSQL pass.
            let databaseB = TestDatabase.selectedBackend == .postgres ? try await TestDatabase.make(.postgres) : nil
            try keyA.privateKeyPEM.write(toFile: directory.file("a.p8"), atomically: true, encoding: .utf8)
            try keyB.privateKeyPEM.write(toFile: directory.file("b.p8"), atomically: true, encoding: .utf8)
            func vaultKey() -> String { "k1:\(Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString())" }
            let sideA = [
                "APPLE_TEAM_ID": teamA, "APPLE_KEY_ID": "KEYAAAAAAA", "APPLE_PRIVATE_KEY_FILE": directory.file("a.p8"),
                "APPLE_CLIENT_IDS": app, "APPLE_BASE_URL": running.baseURL, "ORCHARD_VAULT_KEYS": vaultKey(),
                "ORCHARD_DATABASE_URL": "sqlite:\(directory.file("a.sqlite"))", "ORCHARD_LOG_LEVEL": "info",
            ]
            var sideB = [
                "APPLE_TEAM_ID": teamB, "APPLE_KEY_ID": "KEYBBBBBBB", "APPLE_PRIVATE_KEY_FILE": directory.file("b.p8"),
                "APPLE_CLIENT_IDS": app, "APPLE_BASE_URL": running.baseURL, "ORCHARD_VAULT_KEYS": vaultKey(),
                "ORCHARD_DATABASE_URL": "sqlite:\(directory.file("b.sqlite"))", "ORCHARD_LOG_LEVEL": "info",
                "ORCHARD_WEBHOOK_URLS": receiver.url,
                "ORCHARD_WEBHOOK_SECRET": WebhookReceiver.secret(seed: "transfer-webhook-secret-0123456789"),
            ]
            if let databaseB, case .postgres(let url) = databaseB.url { sideB["ORCHARD_DATABASE_URL"] = url }
            return Installations(
                emulator: emulator,
                running: running,
                directory: directory,
                receiver: receiver,
                http: http,
                databaseB: databaseB,
                sideA: sideA,
                sideB: sideB
            )
        }

        func stop() async {
            await receiver.stop()
            await databaseB?.remove()
            await running.stop()
            try? await http.shutdown()
            directory.remove()
        }
    }

    @Test("users move from team A to team B: same account ids, new subjects, revoked_before_transfer, resumable both sides")
    func appMovesToAnotherTeam() async throws {
        let setup = try await Installations.start()
        defer { Task { await setup.stop() } }
        let (emulator, running, directory, receiver, http) = (setup.emulator, setup.running, setup.directory, setup.receiver, setup.http)
        let (sideA, sideB) = (setup.sideA, setup.sideB)

        // Team A's installation: four users sign up; the last one stops using Sign in with Apple with the app.
        let serveA = try await ServeProcess.start(environment: sideA, logDirectory: directory.path, http: http)
        let clientA = OrchardClient(baseURL: serveA.baseURL, http: http, emulator: emulator)
        var users: [EmulatedUser] = []
        var accountIDs: [String] = []
        for index in 0..<4 {
            let user = emulator.makeUser(firstName: "User\(index)", lastName: "Moving")
            let signIn = try await clientA.signIn(
                user,
                clientID: Self.app,
                userDetails: ["name": ["first_name": "User\(index)", "last_name": "Moving"]]
            ).response
            #expect(signIn.status == 200, "\(String(decoding: signIn.body, as: UTF8.self))")
            users.append(user)
            accountIDs.append(try #require((signIn.json["account"] as? [String: Any])?["id"] as? String))
        }
        #expect(emulator.revokeGrant(sub: users[3].sub, clientID: Self.app) == 1)
        #expect(await serveA.terminate() == 0)

        // Export, with Apple failing the first usermigrationinfo call: one account failed, exit 1.
        let file = directory.file("transfer.jsonl")
        // A key Apple refuses for team A (team B's): a configuration error, exit 2, before any account is tried.
        let wrongKey = sideA.merging(["APPLE_PRIVATE_KEY_FILE": directory.file("b.p8")]) { $1 }
        let refused = try await OrchardProcess.runInBackground(
            ["transfer", "export", "--target", Self.teamB, "--out", directory.file("no.jsonl")],
            environment: wrongKey
        )
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.standardError.contains("apple_client_rejected"), "\(refused.standardError)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("no.jsonl")))

        emulator.injectFailure(endpoint: .userMigrationInfo, failure: .status(503), count: 1)
        let first = try await OrchardProcess.runInBackground(["transfer", "export", "--target", Self.teamB, "--out", file], environment: sideA)
        #expect(first.status == 1, "\(first.standardOutput) \(first.standardError)")
        // Which account met the failure depends on the order of the random account ids: only the failed count is fixed.
        #expect(first.standardOutput.hasSuffix("failed: 1\n"), "\(first.standardOutput)")
        let migrationCalls = emulator.calls(to: .userMigrationInfo).count
        #expect(migrationCalls == 4)
        // The re-run asks Apple only for the failed account.
        let second = try await OrchardProcess.runInBackground(
            ["transfer", "export", "--target", Self.teamB, "--out", file, "--json"],
            environment: sideA
        )
        #expect(second.status == 0, "\(second.standardOutput) \(second.standardError)")
        #expect(second.standardOutput == #"{"exported":3,"revoked_before_transfer":1,"failed":0}"# + "\n")
        #expect(emulator.calls(to: .userMigrationInfo).count == migrationCalls + 1)
        let teamTokenCalls = emulator.calls(to: .token).filter { $0.grantType == "client_credentials" }
        // One team token per run: the bearer is cached while it lives, not asked for per account.
        #expect(teamTokenCalls.filter { $0.status == 200 }.count == 2, "\(teamTokenCalls)")
        #expect(teamTokenCalls.filter { $0.error == "invalid_client" }.count == 1, "the refused key's one try")
        #expect(emulator.calls(to: .userMigrationInfo).allSatisfy { $0.status == 200 || $0.error == "invalid_request" || $0.status == 503 })

        // The file: one line per exported account, with the name; never a subject or an email.
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let lines = text.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(lines.count == 3)
        #expect(Set(lines.compactMap { $0?["account_id"] as? String }) == Set(accountIDs.prefix(3)))
        #expect(lines.allSatisfy { ($0?["client_id"] as? String) == Self.app && ($0?["transfer_sub"] as? String)?.isEmpty == false })
        #expect(lines.allSatisfy { (($0?["name"] as? [String: Any])?["last_name"] as? String) == "Moving" })
        for user in users {
            #expect(!text.contains(user.sub) && !text.contains(user.email ?? "-"))
        }
        let permissions = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        let statusA = try await OrchardProcess.runInBackground(["transfer", "status"], environment: sideA)
        #expect(statusA.standardOutput == "exported: 3\nrevoked_before_transfer: 1\nfailed: 0\n", "\(statusA)")

        // The app moves to team B in App Store Connect.
        var move = HTTPClientRequest(url: running.baseURL + "/_emulator/transfer")
        move.method = .POST
        move.body = .bytes(ByteBuffer(string: #"{"client_id": "\#(Self.app)", "to_team": "\#(Self.teamB)"}"#))
        #expect(try await http.execute(move, timeout: .seconds(10)).status.code == 204)
        #expect(emulator.team(of: Self.app) == Self.teamB)

        // Team B's installation imports; Apple is out of reach for the first exchange, which stays pending: exit 1.
        let serveB = try await ServeProcess.start(environment: sideB, logDirectory: directory.path, http: http)
        let clientB = OrchardClient(baseURL: serveB.baseURL, http: http, emulator: emulator)
        emulator.injectFailure(endpoint: .userMigrationInfo, failure: .status(503), count: 1)
        let imported = try await OrchardProcess.runInBackground(["transfer", "import", file, "--json"], environment: sideB)
        #expect(imported.status == 1, "\(imported.standardOutput) \(imported.standardError)")
        #expect(
            imported.standardOutput == #"{"imported":3,"exchanged":2,"pending":1,"revoked_before_transfer":0,"failed":0}"# + "\n",
            "\(imported.standardOutput) \(imported.standardError)"
        )
        // The file's first line met the failure: the import goes in the file's order.
        let pendingID = try #require(lines.first??["account_id"] as? String)
        let pendingUser = users[try #require(accountIDs.firstIndex(of: pendingID))]
        let pendingShow = try await OrchardProcess.runInBackground(["accounts", "show", pendingID], environment: sideB)
        #expect(pendingShow.standardOutput.contains("apple_sub: \(lines.first??["transfer_sub"] as? String ?? "-")"), "\(pendingShow)")

        // The pending one signs in under team B: its identity token carries transfer_sub, which finds the account.
        let pendingSignIn = try await clientB.signIn(pendingUser, clientID: Self.app).response
        #expect(pendingSignIn.status == 200, "\(String(decoding: pendingSignIn.body, as: UTF8.self)) \(serveB.logText)")
        #expect(pendingSignIn.json["is_new_account"] as? Bool == false)
        let pendingAccount = try #require(pendingSignIn.json["account"] as? [String: Any])
        #expect(pendingAccount["id"] as? String == pendingID)
        #expect(pendingAccount["apple_sub"] as? String == emulator.subject(of: pendingUser, clientID: Self.app))

        // The re-run finds nothing left to do.
        let rerun = try await OrchardProcess.runInBackground(["transfer", "import", file], environment: sideB)
        #expect(rerun.status == 0, "\(rerun.standardOutput) \(rerun.standardError)")
        #expect(rerun.standardOutput == "imported: 0\nexchanged: 3\npending: 0\nrevoked_before_transfer: 0\nfailed: 0\n")

        // Every other migrated user signs in under team B into the same account, with team B's subject and the name
        // kept; but one, left alone for the deletion below.
        let untouchedIndex = try #require([2, 1].first { accountIDs[$0] != pendingID })
        for (index, user) in users.prefix(3).enumerated() where accountIDs[index] != pendingID && index != untouchedIndex {
            let signIn = try await clientB.signIn(user, clientID: Self.app).response
            #expect(signIn.status == 200, "\(String(decoding: signIn.body, as: UTF8.self))")
            #expect(signIn.json["is_new_account"] as? Bool == false)
            let account = try #require(signIn.json["account"] as? [String: Any])
            #expect(account["id"] as? String == accountIDs[index])
            let teamBSubject = emulator.subject(of: user, clientID: Self.app)
            #expect(teamBSubject != user.sub)
            #expect(account["apple_sub"] as? String == teamBSubject)
            #expect((account["name"] as? [String: Any])?["first_name"] as? String == "User\(index)")
            #expect(account["email"] as? String == emulator.view(of: user, clientID: Self.app).email)
        }

        // account.transferred, once per exchanged account, whether import or a sign-in completed it.
        _ = await eventually {
            receiver.delivered.filter { $0.json["type"] as? String == "account.transferred" }.count >= 3
        }
        let transferred = receiver.delivered.filter { $0.json["type"] as? String == "account.transferred" }
        #expect(transferred.count == 3)
        #expect(Set(transferred.compactMap { $0.json["account_id"] as? String }) == Set(accountIDs.prefix(3)))
        // Each account's history says so once, on team B's side, whether the import or a sign-in completed it.
        for id in accountIDs.prefix(3) {
            let history = try await OrchardProcess.runInBackground(["accounts", "history", id, "--json"], environment: sideB)
            let types = (try JSONSerialization.jsonObject(with: Data(history.standardOutput.utf8)) as? [[String: Any]])?
                .compactMap { $0["type"] as? String }
            #expect(types?.filter { $0 == "transferred" }.count == 1, "\(id): \(history.standardOutput)")
        }
        let pendingHistory = try await OrchardProcess.runInBackground(["accounts", "history", pendingID], environment: sideB)
        #expect(pendingHistory.standardOutput.contains("\ttransferred\t"), "\(pendingHistory.standardOutput)")

        // An account not signed in since the move holds no Apple token: apple_credential unknown, deletion manual.
        let untouched = accountIDs[untouchedIndex]
        let show = try await OrchardProcess.runInBackground(["accounts", "show", untouched], environment: sideB)
        #expect(show.standardOutput.contains("apple_credential: unknown"), "\(show)")
        let deletion = try await OrchardProcess.runInBackground(["accounts", "delete", untouched], environment: sideB)
        #expect(deletion.status == 0, "\(deletion)")
        #expect(deletion.standardOutput.contains("apple_revocation: manual_required"), "\(deletion.standardOutput)")

        // The revoked user has no line: they sign in under team B as a new account.
        let statusB = try await OrchardProcess.runInBackground(["transfer", "status", "--json"], environment: sideB)
        #expect(
            statusB.standardOutput == #"{"imported":2,"exchanged":2,"pending":0,"revoked_before_transfer":0,"failed":0}"# + "\n",
            "\(statusB)"
        )
        // Importing the file again does not bring the deleted account back.
        let again = try await OrchardProcess.runInBackground(["transfer", "import", file], environment: sideB)
        #expect(again.status == 0, "\(again)")
        #expect(again.standardOutput == "imported: 0\nexchanged: 2\npending: 0\nrevoked_before_transfer: 0\nfailed: 0\n")
        #expect(try await OrchardProcess.runInBackground(["accounts", "show", untouched], environment: sideB).status == 3)
        #expect(await serveB.terminate() == 0)
    }

    @Test("kill -9 in the middle of export and of import: each re-run does only what is left; one account.transferred per account")
    func killedMidwayResumes() async throws {
        let setup = try await Installations.start()
        defer { Task { await setup.stop() } }
        let serveA = try await ServeProcess.start(environment: setup.sideA, logDirectory: setup.directory.path, http: setup.http)
        let clientA = OrchardClient(baseURL: serveA.baseURL, http: setup.http, emulator: setup.emulator)
        let count = 12
        var accountIDs: Set<String> = []
        var users: [EmulatedUser] = []
        for _ in 0..<count {
            users.append(setup.emulator.makeUser())
            let signIn = try await clientA.signIn(users[users.count - 1], clientID: Self.app).response
            accountIDs.insert(try #require((signIn.json["account"] as? [String: Any])?["id"] as? String))
        }
        #expect(await serveA.terminate() == 0)
        let file = setup.directory.file("transfer.jsonl")

        /// Starts `orchard ARGUMENTS`, waits until Apple has answered 3 more of its usermigrationinfo calls, then kills
        /// it with SIGKILL. Apple holds every later call until the kill, so the command cannot finish first however
        /// late the kill comes.
        func killMidway(_ arguments: [String], environment: [String: String]) async throws {
            let emulator = setup.emulator
            @Sendable func answered() -> Int { emulator.calls(to: .userMigrationInfo).filter { $0.status == 200 }.count }
            let before = answered()
            emulator.holdCalls { $0.endpoint == .userMigrationInfo && answered() >= before + 3 }
            defer { setup.emulator.releaseHeldCalls() }
            let process = Process()
            process.executableURL = OrchardProcess.executable
            process.arguments = arguments
            process.environment = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory()].merging(environment) { $1 }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try ChildProcess.start(process)
            let reached = await eventually { answered() >= before + 3 }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(reached)
            #expect(process.terminationReason == .uncaughtSignal, "killed before it finished")
        }

        // Each command is killed partway through.
        try await killMidway(["transfer", "export", "--target", Self.teamB, "--out", file], environment: setup.sideA)
        let callsBefore = setup.emulator.calls(to: .userMigrationInfo).count
        let exported = try await OrchardProcess.runInBackground(
            ["transfer", "export", "--target", Self.teamB, "--out", file, "--json"],
            environment: setup.sideA
        )
        #expect(exported.standardOutput == #"{"exported":12,"revoked_before_transfer":0,"failed":0}"# + "\n", "\(exported)")
        #expect(setup.emulator.calls(to: .userMigrationInfo).count - callsBefore < count, "the re-run asked only for what was left")
        let written = try String(contentsOfFile: file, encoding: .utf8)
        #expect(written.split(separator: "\n").count == count)

        // Vault rotation re-seals the transfer identifiers too: with the old key gone, a re-run writes the same file.
        let newKey = "k2:\(Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString())"
        let bothKeys = setup.sideA.merging(["ORCHARD_VAULT_KEYS": newKey + "," + (setup.sideA["ORCHARD_VAULT_KEYS"] ?? "")]) { $1 }
        let rotated = try await OrchardProcess.runInBackground(["vault", "rotate"], environment: bothKeys)
        #expect(rotated.status == 0, "\(rotated)")
        let newKeyOnly = setup.sideA.merging(["ORCHARD_VAULT_KEYS": newKey]) { $1 }
        let rewritten = try await OrchardProcess.runInBackground(
            ["transfer", "export", "--target", Self.teamB, "--out", file],
            environment: newKeyOnly
        )
        #expect(rewritten.status == 0, "\(rewritten)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == written)

        try setup.emulator.transfer(clientID: Self.app, toTeam: Self.teamB)
        // One user reaches team B's installation before the import: a new account, which the import then leaves alone.
        let serveB = try await ServeProcess.start(environment: setup.sideB, logDirectory: setup.directory.path, http: setup.http)
        let early = try await OrchardClient(baseURL: serveB.baseURL, http: setup.http, emulator: setup.emulator)
            .signIn(users[0], clientID: Self.app).response
        #expect(early.json["is_new_account"] as? Bool == true)
        #expect(await serveB.terminate() == 0)
        try await killMidway(["transfer", "import", file], environment: setup.sideB)
        let imported = try await OrchardProcess.runInBackground(["transfer", "import", file, "--json"], environment: setup.sideB)
        #expect(imported.status == 1, "\(imported)")
        #expect(imported.standardOutput.contains(#""exchanged":11,"pending":0,"revoked_before_transfer":0,"failed":1}"#), "\(imported)")
        #expect(imported.standardError.contains("they signed in before the import"), "\(imported.standardError)")

        // Exactly one account.transferred per account in team B's outbox, killed run or not.
        let webhooks = try await OrchardProcess.runInBackground(["accounts", "webhooks", "--status", "pending"], environment: setup.sideB)
        let rows = webhooks.standardOutput.split(separator: "\n").filter { $0.contains("account.transferred") }
        #expect(rows.count == count - 1, "\(webhooks.standardOutput)")
        #expect(Set(rows.map { $0.split(separator: "\t")[0] }).count == count - 1, "one event id per account")
    }
}
