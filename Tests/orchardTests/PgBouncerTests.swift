import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import OrchardTesting
import Storage
import Testing

/// Managed PostgreSQL puts PgBouncer in front of the database, mostly in transaction pooling: there, named prepared
/// statements do not outlive a transaction and `LISTEN` is dropped without an error. With
/// `ORCHARD_DATABASE_POOLER=transaction` and a direct `ORCHARD_DATABASE_LISTEN_URL`, everything works through it.
@Suite(
    "Through PgBouncer in transaction pooling",
    .enabled(if: TestDatabase.selectedBackend == .postgres, "the PostgreSQL pass runs it"),
    .serialized
)
struct PgBouncerTests {
    /// Two replicas whose pools go through PgBouncer, with `listenURL(direct, bouncer)` for their listeners.
    struct Setup {
        let base: ServeProcessTests.Setup
        let database: TestDatabase
        let bouncer: PgBouncer
        let receiver: WebhookReceiver
        let environment: [String: String]
        let direct: String

        static func start(listenThroughBouncer: Bool = false) async throws -> Setup? {
            guard PgBouncer.isInstalled else {
                let message = "pgbouncer is not installed (Debian: pgbouncer): the PgBouncer tests were not run"
                if ProcessInfo.processInfo.environment["CI"] == "true" {
                    Issue.record(Comment(rawValue: message))
                } else {
                    print("WARNING: \(message)")
                }
                return nil
            }
            let base = try await ServeProcessTests.Setup.start()
            let database = try await TestDatabase.make(.postgres)
            guard case DatabaseURL.postgres(let direct) = database.url else { throw CancellationError() }
            guard let admin = TestDatabase.postgresAdminURL else { throw CancellationError() }
            let bouncer = try await PgBouncer.start(before: admin)
            let receiver = try await WebhookReceiver.start()
            var environment = base.environment
            environment["ORCHARD_DATABASE_URL"] = bouncer.url(for: direct)
            environment["ORCHARD_DATABASE_POOLER"] = "transaction"
            environment["ORCHARD_DATABASE_LISTEN_URL"] = listenThroughBouncer ? bouncer.url(for: direct) : direct
            environment["ORCHARD_WEBHOOK_URLS"] = receiver.url
            environment["ORCHARD_WEBHOOK_SECRET"] = WebhookReceiver.secret(seed: "pgbouncer-webhook-secret-0123456789")
            return Setup(base: base, database: database, bouncer: bouncer, receiver: receiver, environment: environment, direct: direct)
        }

        func serve() async throws -> ServeProcess {
            try await ServeProcess.start(environment: environment, logDirectory: base.directory.path, http: base.http)
        }

        func run(_ arguments: [String]) async throws -> OrchardProcess.Result {
            try await OrchardProcess.runInBackground(arguments, environment: environment)
        }

        func stop() async {
            await receiver.stop()
            await bouncer.stop()
            await database.remove()
            await base.stop()
        }
    }

    /// `/metrics` of `serve`.
    static func metrics(_ client: OrchardClient) async throws -> String {
        String(decoding: try await client.request(.GET, "/metrics").body, as: UTF8.self)
    }

    @Test("every route, job and command works through PgBouncer, and two replicas' memories stay coherent")
    func everythingThroughPgBouncer() async throws {
        guard let setup = try await Setup.start() else { return }
        var replicas: [ServeProcess] = []
        do {
            // Commands first: the schema through the pooler.
            let migrated = try await setup.run(["migrate"])
            #expect(migrated.status == 0, "\(migrated.standardError)")
            for _ in 0..<2 { replicas.append(try await setup.serve()) }
            let (a, b) = (setup.base.client(replicas[0]), setup.base.client(replicas[1]))
            let user = setup.base.emulator.makeUser()
            let first = try await a.signIn(user, clientID: "com.example.orchard.app").response
            #expect(first.status == 200)
            let token = try #require((first.json["session"] as? [String: Any])?["token"] as? String)
            let id = try #require((first.json["account"] as? [String: Any])?["id"] as? String)
            // Replica b answers from memory once its listener has heard itself and warmed up.
            #expect(
                await eventually(timeout: 60) {
                    _ = try? await b.request(.GET, "/v1/session", bearer: token)
                    let metrics = (try? await Self.metrics(b)) ?? ""
                    return ServeProcessTests.counter(metrics, "orchard_session_cache_hits_total") > 0
                },
                "replica b never answered from memory"
            )
            #expect(try await Self.metrics(b).contains("orchard_session_cache_enabled 1"))
            #expect(try await a.request(.POST, "/v1/session/token", bearer: token).status == 200)
            #expect(try await b.request(.GET, "/v1/sessions", bearer: token).status == 200)
            #expect(try await b.request(.GET, "/v1/account/events", bearer: token).status == 200)

            // A second device; ended from the first on replica a, refused by replica b at once.
            let second = try await b.signIn(user, clientID: "com.example.orchard.app").response
            let secondToken = try #require((second.json["session"] as? [String: Any])?["token"] as? String)
            for _ in 0..<3 { #expect(try await b.request(.GET, "/v1/session", bearer: secondToken).status == 200) }
            #expect(try await a.request(.DELETE, "/v1/sessions", bearer: token).json["ended"] as? Int == 1)
            #expect(try await b.request(.GET, "/v1/session", bearer: secondToken)["reason"] == "signed_out")

            // Apple's notification, processed by a job, and its webhook.
            let payload = try setup.base.emulator.signNotification(type: "email-disabled", sub: user.sub, clientID: "com.example.orchard.app")
            #expect(try await b.request(.POST, "/v1/apple/notifications", json: ["payload": payload]).status == 200)
            #expect(await eventually { setup.receiver.delivered.contains { $0.json["type"] as? String == "account.email_forwarding_changed" } })

            // The operator's commands beside the replicas.
            for arguments in [["accounts", "list"], ["accounts", "history", id], ["vault", "status"], ["keys", "list"], ["transfer", "status"]] {
                let result = try await setup.run(arguments)
                #expect(result.status == 0, "orchard \(arguments.joined(separator: " ")): \(result.standardError)")
            }
            let other = try await a.signIn(setup.base.emulator.makeUser(), clientID: "com.example.orchard.app").response
            let otherToken = try #require((other.json["session"] as? [String: Any])?["token"] as? String)
            let otherID = try #require((other.json["account"] as? [String: Any])?["id"] as? String)
            for _ in 0..<3 { #expect(try await b.request(.GET, "/v1/session", bearer: otherToken).status == 200) }
            let deleted = try await setup.run(["accounts", "delete", otherID])
            #expect(deleted.status == 0, "\(deleted.standardError)")
            #expect(try await b.request(.GET, "/v1/session", bearer: otherToken)["reason"] == "account_deleted", "refused at once")

            // The user's deletion, revoked at Apple; the session refused everywhere.
            let deletion = try await b.request(.DELETE, "/v1/account", bearer: token)
            #expect(deletion.status == 200)
            #expect(try await a.request(.GET, "/v1/session", bearer: token).status == 401)
            #expect(await eventually { setup.base.emulator.calls(to: .revoke).contains { $0.status == 200 } })
            for replica in replicas {
                #expect(!replica.logText.contains("prepared statement"), "a named statement went through the pooler")
                #expect(await replica.terminate() == 0)
            }
        } catch {
            for replica in replicas { await replica.kill() }
            await setup.stop()
            throw error
        }
        await setup.stop()
    }

    @Test("a listener through the transaction pooler hears nothing: one error naming ORCHARD_DATABASE_LISTEN_URL, no memory")
    func pooledListenerTurnsMemoryOff() async throws {
        guard let setup = try await Setup.start(listenThroughBouncer: true) else { return }
        do {
            let serve = try await setup.serve()
            let client = setup.base.client(serve)
            #expect(
                await eventually(timeout: 30) { serve.logText.contains("ORCHARD_DATABASE_LISTEN_URL") },
                "no error about the listener: \(serve.logText)"
            )
            let line = serve.logText.split(separator: "\n").first { $0.contains("ORCHARD_DATABASE_LISTEN_URL") } ?? ""
            #expect(line.contains("error"), "not an error line: \(line)")
            let signIn = try await client.signIn(setup.base.emulator.makeUser(), clientID: "com.example.orchard.app").response
            let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
            for _ in 0..<5 { #expect(try await client.request(.GET, "/v1/session", bearer: token).status == 200) }
            let metrics = try await Self.metrics(client)
            #expect(metrics.contains("orchard_session_cache_enabled 0"))
            #expect(ServeProcessTests.counter(metrics, "orchard_session_cache_hits_total") == 0, "memory answered without a listener")
            #expect(try await client.request(.DELETE, "/v1/session", bearer: token).status == 204)
            #expect(try await client.request(.GET, "/v1/session", bearer: token)["reason"] == "signed_out")
            #expect(await serve.terminate() == 0)
        } catch {
            await setup.stop()
            throw error
        }
        await setup.stop()
    }

    @Test("ORCHARD_DATABASE_POOLER=transaction without ORCHARD_DATABASE_LISTEN_URL is a configuration error, exit 2")
    func poolerNeedsListenURL() async throws {
        guard let setup = try await Setup.start() else { return }
        var environment = setup.environment
        environment["ORCHARD_DATABASE_LISTEN_URL"] = nil
        let checked = try await OrchardProcess.runInBackground(["config", "check"], environment: environment)
        #expect(checked.status == 2)
        #expect(checked.standardError.contains("ORCHARD_DATABASE_LISTEN_URL"), "\(checked.standardError)")
        environment["ORCHARD_DATABASE_POOLER"] = "sometimes"
        let bad = try await OrchardProcess.runInBackground(["config", "check"], environment: environment)
        #expect(bad.status == 2)
        #expect(bad.standardError.contains("ORCHARD_DATABASE_POOLER"))
        await setup.stop()
    }
}
