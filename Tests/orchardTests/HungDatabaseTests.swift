import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardTesting
import Storage
import Testing

/// serve on a fresh PostgreSQL database that it reaches through a proxy that can stop answering: queries already sent
/// then never return, and PostgresNIO cannot take them back. (A real cluster, shared by the whole run, cannot be made
/// to hang for one test; DatabaseOutageTests stops a cluster of its own, which closes the connections instead.)
@Suite("PostgreSQL that stops answering", .enabled(if: TestDatabase.selectedBackend == .postgres, "needs the PostgreSQL pass"))
struct HungDatabaseTests {
    struct Stage {
        let setup: ServeProcessTests.Setup
        let database: TestDatabase
        let proxy: StallingTCPProxy
        let serve: ServeProcess

        static func start(grace: Int) async throws -> Stage {
            let setup = try await ServeProcessTests.Setup.start()
            let database = try await TestDatabase.make(.postgres)
            guard case .postgres(let url) = database.url else { throw CancellationError() }
            var components = try #require(URLComponents(string: url))
            let proxy = try await StallingTCPProxy.start(to: try #require(components.host), port: try #require(components.port))
            components.port = proxy.port
            var environment = setup.environment
            environment["ORCHARD_DATABASE_URL"] = components.string
            environment["ORCHARD_SHUTDOWN_GRACE"] = "\(grace)"
            let serve = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
            return Stage(setup: setup, database: database, proxy: proxy, serve: serve)
        }

        var client: OrchardClient { setup.client(serve) }

        func stop() async {
            await serve.kill()
            await proxy.stop()
            await database.remove()
            await setup.stop()
        }
    }

    @Test("a session check while PostgreSQL has stopped answering: 503 storage_unavailable at the deadline, not held for good")
    func requestAnswered() async throws {
        let stage = try await Stage.start(grace: 10)
        defer { Task { await stage.stop() } }
        var tokens: [String] = []
        for _ in 0..<2 {
            let signIn = try await stage.client.signIn(stage.setup.emulator.makeUser(), clientID: "com.example.orchard.app").response
            tokens.append(try #require((signIn.json["session"] as? [String: Any])?["token"] as? String))
        }
        #expect(try await stage.client.request(.GET, "/v1/session", bearer: tokens[0]).status == 200)

        stage.proxy.stall()
        // A session never checked before: serve's memory (which may answer the first one for a second after its check,
        // while its lease lasts) does not hold it, so its check reads the stalled database.
        let started = ContinuousClock.now
        let during = try await stage.client.request(.GET, "/v1/session", bearer: tokens[1])
        let took = ContinuousClock.now - started
        // Before, the read waited on its connection for good (the client gave up after its own 60 s).
        #expect(during.status == 503)
        #expect(during.code == "storage_unavailable")
        #expect(stage.proxy.heldBytes > 0, "the read never reached the stalled database")
        // The store's deadline is 10 s, counted from when serve begins the read (or, when the job loops' stalled claims
        // hold every connection, begins to wait for one): a moment no one outside serve sees, and never before the
        // request is sent. The margin is for a loaded machine on which serve reads the request late.
        #expect(took < .seconds(30), "answered after \(took)")
    }

    @Test("SIGTERM while PostgreSQL has stopped answering: serve exits 0 soon after ORCHARD_SHUTDOWN_GRACE, saying why")
    func shutdown() async throws {
        let stage = try await Stage.start(grace: 1)
        defer { Task { await stage.stop() } }
        stage.proxy.stall()
        // A session check in flight: its read goes to the database and waits there (the job loops' claims do too).
        let client = stage.client
        let hung = Task { try? await client.request(.GET, "/v1/session", bearer: "a-token-nobody-was-given") }
        defer { hung.cancel() }
        #expect(await eventually { stage.proxy.heldBytes > 0 }, "no query reached the stalled database")

        let started = ContinuousClock.now
        let status = await stage.serve.terminate()
        let took = ContinuousClock.now - started
        // Before, ServiceGroup's cancellation limit ended serve with a crash (SIGILL and a backtrace) instead.
        #expect(status == 0, "\(stage.serve.logText)")
        #expect(!stage.serve.logText.contains("Fatal error"), "\(stage.serve.logText)")
        // Either the hung work outlasted the grace and serve says so, or the pool's own shutdown failed the hung query
        // and everything ended within the grace (the pool is a service of the group: which comes first is a race).
        #expect(
            stage.serve.logText.contains("shutdown did not finish in time") || took < .seconds(6),
            "shutdown took \(took) without saying why: \(stage.serve.logText)"
        )
        // When it says so, it names what was still running (here the application and, inside it, the session listener,
        // whose UNLISTEN waits on the stalled connection: `shutdown.still_running=OrchardService,ReplicaListener`).
        if let line = stage.serve.logText.split(separator: "\n").first(where: { $0.contains("shutdown did not finish in time") }) {
            #expect(line.contains(/shutdown\.still_running=[A-Z]/), "\(line)")
        }
        // The grace (1 s) and the 5 s given to cancelled work, with a wide margin for a loaded machine.
        #expect(took < .seconds(20), "shutdown took \(took)")
    }
}
