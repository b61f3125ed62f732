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
@Suite("Replicas on PostgreSQL", .enabled(if: TestDatabase.postgresAdminURL != nil, "needs ORCHARD_TEST_POSTGRES_URL"))
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
            try await Task.sleep(for: .seconds(9))
            let validations = pair.setup.emulator.calls(to: .token).filter { $0.grantType == "refresh_token" && $0.status == 200 }
            #expect(validations.count >= users.count)
            for user in users {
                let mine = Set(pair.setup.emulator.issuedTokens(sub: user.sub))
                let times = validations.filter { mine.contains($0.refreshToken ?? "") }.map(\.time).sorted()
                #expect(!times.isEmpty)
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
