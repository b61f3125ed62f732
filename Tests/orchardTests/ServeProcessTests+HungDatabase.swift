import Foundation
import NIOHTTP1
import OrchardTesting
import Storage
import Testing

extension ServeProcessTests {
    @Test(
        "SIGTERM while PostgreSQL has stopped answering: serve exits 0 soon after ORCHARD_SHUTDOWN_GRACE, saying why",
        .enabled(if: TestDatabase.selectedBackend == .postgres, "needs the PostgreSQL pass")
    )
    func shutdownWithHungDatabase() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let testDatabase = try await TestDatabase.make(.postgres)
        defer { Task { await testDatabase.remove() } }
        guard case .postgres(let url) = testDatabase.url else { throw CancellationError() }
        var components = try #require(URLComponents(string: url))
        let host = try #require(components.host)
        let port = try #require(components.port)
        // serve reaches the cluster through a proxy that can stop answering: queries already sent then never return,
        // and PostgresNIO cannot take them back.
        let proxy = try await StallingTCPProxy.start(to: host, port: port)
        defer { Task { await proxy.stop() } }
        components.port = proxy.port
        var environment = setup.environment
        environment["ORCHARD_DATABASE_URL"] = components.string
        environment["ORCHARD_SHUTDOWN_GRACE"] = "1"
        let serve = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
        defer { Task { await serve.kill() } }

        proxy.stall()
        // A session check in flight: its read goes to the database and waits there (the job loops' claims do too).
        let hung = Task { try? await setup.client(serve).request(.GET, "/v1/session", bearer: "a-token-nobody-was-given") }
        defer { hung.cancel() }
        #expect(await eventually(timeout: 30) { proxy.heldBytes > 0 }, "no query reached the stalled database")

        let started = ContinuousClock.now
        let status = await serve.terminate()
        let took = ContinuousClock.now - started
        // Before, ServiceGroup's cancellation limit ended serve with a crash (SIGILL and a backtrace) instead.
        #expect(status == 0, "\(serve.logText)")
        #expect(!serve.logText.contains("Fatal error"), "\(serve.logText)")
        #expect(serve.logText.contains("shutdown did not finish in time"), "\(serve.logText)")
        // The grace (1 s) and the 5 s given to cancelled work, with a wide margin for a loaded machine.
        #expect(took < .seconds(20), "shutdown took \(took)")
    }
}
