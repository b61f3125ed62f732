import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OrchardTesting
import SQLKit
import Storage
import Testing

/// Several `orchard serve` replicas on one PostgreSQL database: every job exactly once, through crashes and outages.
@Suite("Replicas on PostgreSQL", .enabled(if: TestDatabase.selectedBackend == .postgres, "needs the PostgreSQL pass"))
struct ReplicaTests {
    /// Two replicas on a fresh database, with a webhook receiver.
    struct Pair {
        let setup: ServeProcessTests.Setup
        let database: TestDatabase
        let receiver: WebhookReceiver
        let replicas: [ServeProcess]

        static func start(extra: [String: String] = [:]) async throws -> Pair {
            let setup = try await ServeProcessTests.Setup.start()
            let database = try await TestDatabase.make(.postgres)
            let receiver = try await WebhookReceiver.start()
            guard case .postgres(let url) = database.url else { throw CancellationError() }
            var environment = setup.environment
            environment["ORCHARD_DATABASE_URL"] = url
            environment["ORCHARD_WEBHOOK_URLS"] = receiver.url
            environment["ORCHARD_WEBHOOK_SECRET"] = WebhookReceiver.secret(seed: "replica-webhook-secret-0123456789")
            environment.merge(extra) { $1 }
            var replicas: [ServeProcess] = []
            for _ in 0..<2 {
                replicas.append(try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http))
            }
            return Pair(setup: setup, database: database, receiver: receiver, replicas: replicas)
        }

        func client(_ index: Int) -> OrchardClient { setup.client(replicas[index]) }

        func stop() async {
            for replica in replicas { await replica.terminate() }
            await receiver.stop()
            await database.remove()
            await setup.stop()
        }
    }

    @Test("the same notification posted to both replicas at once: one effect, one webhook")
    func notificationToBoth() async throws {
        let pair = try await Pair.start()
        do {
            let user = pair.setup.emulator.makeUser()
            let signIn = try await pair.client(0).signIn(user, clientID: "com.example.orchard.app").response
            let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
            let payload = try pair.setup.emulator.signNotification(type: "email-disabled", sub: user.sub, clientID: "com.example.orchard.app")
            async let first = pair.client(0).request(.POST, "/v1/apple/notifications", json: ["payload": payload])
            async let second = pair.client(1).request(.POST, "/v1/apple/notifications", json: ["payload": payload])
            let (a, b) = try await (first, second)
            #expect(a.status == 200 && b.status == 200)
            #expect(Set([a["status"], b["status"]]) == Set(["accepted", "duplicate"]))
            #expect(
                await eventually {
                    ((try? await pair.client(1).request(.GET, "/v1/session", bearer: token))?.json["account"] as? [String: Any])?["email_forwarding"]
                        as? String == "disabled"
                }
            )
            #expect(await eventually { pair.receiver.delivered.count == 1 })
            #expect(await pair.client(0).waitForJobPasses("webhooks"))
            #expect(await pair.client(1).waitForJobPasses("webhooks"))
            #expect(pair.receiver.attempts.count == 1)
        } catch {
            await pair.stop()
            throw error
        }
        await pair.stop()
    }

    @Test("twenty deletions during an Apple outage, one replica killed midway: every token revoked exactly once")
    func deletionsThroughCrash() async throws {
        let pair = try await Pair.start()
        do {
            var tokens: [String] = []
            var users: [EmulatedUser] = []
            for index in 0..<20 {
                let user = pair.setup.emulator.makeUser()
                users.append(user)
                let response = try await pair.client(index % 2).signIn(user, clientID: "com.example.orchard.app").response
                tokens.append(try #require((response.json["session"] as? [String: Any])?["token"] as? String))
            }
            pair.setup.emulator.injectFailure(endpoint: .revoke, failure: .status(503), count: 100_000)
            for (index, token) in tokens.enumerated() {
                if index == 10 { await pair.replicas[0].kill() }
                let replica = index < 10 ? index % 2 : 1
                let response = try await pair.client(replica).request(.DELETE, "/v1/account", bearer: token)
                #expect(response["apple_revocation"] == "pending")
            }
            pair.setup.emulator.clearFailures()
            let refreshTokens = users.map { user in Set(pair.setup.emulator.issuedTokens(sub: user.sub)) }
            let done = await eventually {
                pair.setup.emulator.calls(to: .revoke).filter { $0.status == 200 }.count >= 20
            }
            #expect(done, "\(pair.replicas[1].logText.suffix(2000))")
            #expect(await pair.client(1).waitForJobPasses("revocations"))
            let accepted = pair.setup.emulator.calls(to: .revoke).filter { $0.status == 200 }
            #expect(accepted.count == 20)
            for tokensOfUser in refreshTokens {
                #expect(accepted.filter { tokensOfUser.contains($0.token ?? "") }.count == 1)
            }
        } catch {
            await pair.stop()
            throw error
        }
        await pair.stop()
    }

    @Test("refresh validation with a 2-second interval never validates a token twice per interval across replicas")
    func validationAcrossReplicas() async throws {
        let pair = try await Pair.start(extra: ["ORCHARD_REFRESH_VALIDATION_INTERVAL": "2"])
        do {
            var users: [EmulatedUser] = []
            for index in 0..<6 {
                let user = pair.setup.emulator.makeUser()
                users.append(user)
                _ = try await pair.client(index % 2).signIn(user, clientID: "com.example.orchard.app")
            }
            // Waits for a state, not a time: every user validated three times (so each has two spacings to check),
            // however slowly the job passes run on this machine.
            let signedUp = users
            func validationTimes() -> [[Date]] {
                let validations = pair.setup.emulator.calls(to: .token).filter { $0.grantType == "refresh_token" && $0.status == 200 }
                return signedUp.map { user in
                    let mine = Set(pair.setup.emulator.issuedTokens(sub: user.sub))
                    return validations.filter { mine.contains($0.refreshToken ?? "") }.map(\.time).sorted()
                }
            }
            let validatedThrice = await eventually(timeout: 60) { validationTimes().allSatisfy { $0.count >= 3 } }
            #expect(validatedThrice, "\(validationTimes().map(\.count))")
            for times in validationTimes() {
                for (earlier, later) in zip(times, times.dropFirst()) {
                    #expect(later.timeIntervalSince(earlier) >= 1.9, "validated twice within an interval")
                }
            }
        } catch {
            await pair.stop()
            throw error
        }
        await pair.stop()
    }

    @Test("spent nonces are removed by replicas running retention side by side: the table empties, no replica errs")
    func retentionAcrossReplicas() async throws {
        let pair = try await Pair.start(extra: ["ORCHARD_NONCE_LIFETIME": "2"])
        do {
            for index in 0..<60 {
                let minted = try await pair.client(index % 2).request(.POST, "/v1/auth/apple/nonce")
                #expect(minted.status == 201)
            }
            let count = {
                try await pair.database.client.withDatabase { db in
                    try await db.raw("SELECT COUNT(*) AS n FROM nonces").first()?.decode(column: "n", as: Int.self) ?? -1
                }
            }
            #expect(try await count() > 0)
            // Past the 2-second lifetime, within the 5 seconds the contract allows (plus slack for a loaded machine).
            #expect(await eventually { (try? await count()) == 0 }, "expired nonces stayed")
            for replica in pair.replicas {
                #expect(!replica.logText.contains(" error "), "a replica logged an error:\n\(replica.logText)")
                #expect(
                    try await pair.setup.http.execute(HTTPClientRequest(url: replica.baseURL + "/health/ready"), timeout: .seconds(5)).status == .ok
                )
            }
        } catch {
            await pair.stop()
            throw error
        }
        await pair.stop()
    }
}

extension ReplicaTests {
    /// The `kid` of a token `client` gets for `session`.
    static func signingKeyID(_ client: OrchardClient, _ session: String) async throws -> String? {
        let answer = try await client.request(.POST, "/v1/session/token", bearer: session)
        guard let token = answer["access_token"], let header = token.split(separator: ".").first else { return nil }
        var text = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: text) else { return nil }
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["kid"] as? String
    }

    @Test(
        "two replicas starting together make one signing key and sign with it; orchard keys rotate reaches both within 10 s",
        .enabled(if: TestDatabase.selectedBackend == .postgres, "the PostgreSQL pass runs it")
    )
    func replicasShareSigningKeys() async throws {
        let setup = try await ServeProcessTests.Setup.start()
        let database = try await TestDatabase.make(.postgres)
        guard case .postgres(let url) = database.url else { throw CancellationError() }
        var environment = setup.environment
        environment["ORCHARD_DATABASE_URL"] = url
        let replicaEnvironment = environment
        async let first = ServeProcess.start(environment: replicaEnvironment, logDirectory: setup.directory.path, http: setup.http)
        async let second = ServeProcess.start(environment: replicaEnvironment, logDirectory: setup.directory.path, http: setup.http)
        let replicas = try await [first, second]
        do {
            #expect(try await database.client.read("SELECT id FROM signing_keys").count == 1, "one key, however the starts raced")
            let clients = replicas.map { setup.client($0) }
            let signIn = try await clients[0].signIn(setup.emulator.makeUser(), clientID: "com.example.orchard.app").response
            let session = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
            let kids = [try await Self.signingKeyID(clients[0], session), try await Self.signingKeyID(clients[1], session)]
            #expect(kids[0] != nil && kids[0] == kids[1])
            let sets = [
                try await clients[0].request(.GET, "/.well-known/jwks.json").body,
                try await clients[1].request(.GET, "/.well-known/jwks.json").body,
            ]
            #expect(sets[0] == sets[1])

            let rotated = try await OrchardProcess.runInBackground(["keys", "rotate"], environment: environment)
            #expect(rotated.status == 0, "\(rotated.standardError)")
            let newKey = try #require(
                rotated.standardOutput.split(separator: "\n").first { $0.hasPrefix("new_key: ") }?.split(separator: " ").dropFirst().first
            )
            // "Within 10 s" counts from the rotation's commit: the new key's created_at, written just before it (a
            // deadline taken when `keys rotate` returned would be later than the rule's, and let a late replica pass).
            let created = try #require(
                try await database.client.read("SELECT created_at FROM signing_keys WHERE id = \(bind: String(newKey))").first?
                    .decode(column: "created_at", as: Int64.self)
            )
            let rotatedBy = Date(timeIntervalSince1970: Double(created) / 1000 + 10)
            for client in clients {
                // Until the deadline a replica may still sign with the old key; a token minted after it may not.
                _ = await eventually(timeout: max(0, rotatedBy.timeIntervalSinceNow)) {
                    (try? await Self.signingKeyID(client, session)) == String(newKey)
                }
                let signedWith = try? await Self.signingKeyID(client, session)
                #expect(
                    signedWith == String(newKey),
                    "10 s after the rotation's commit a replica signs with \(signedWith.map { "\($0), not the new key" } ?? "nothing (the token request failed)")"
                )
            }
            let listed = try await OrchardProcess.runInBackground(["keys", "list", "--json"], environment: environment)
            #expect(listed.status == 0)
            let keys = try #require(try JSONSerialization.jsonObject(with: Data(listed.standardOutput.utf8)) as? [[String: Any]])
            #expect(keys.map { $0["state"] as? String } == ["current", "retired"], "\(keys)")
            #expect(keys.first?["id"] as? String == String(newKey))
            #expect(keys.last?["published_until"] is String)
        } catch {
            Issue.record(error)
        }
        for replica in replicas { await replica.terminate() }
        await database.remove()
        await setup.stop()
    }
}
