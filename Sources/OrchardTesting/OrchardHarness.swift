public import Accounts
import AppleID
public import AppleIDEmulator
public import AsyncHTTPClient
import Crypto
import Foundation
public import InMemoryLogging
import Logging
import Metrics
public import MetricsTestKit
public import OrchardServer
import Prometheus
public import Storage

/// Orchard and the Apple emulator running over real sockets for one test, with one test clock, a fresh vault key and a
/// temporary SQLite file.
public struct OrchardHarness: Sendable {
    /// The client id the harness configures.
    public static let clientID = "com.example.orchard.app"
    /// A second configured client id (a Services ID).
    public static let webClientID = "com.example.orchard.web"

    /// The clock Orchard and the emulator share.
    public let clock: TestWallClock
    /// The emulator, to steer and to read its calls.
    public let emulator: AppleEmulator
    /// The running emulator.
    public let emulatorServer: RunningEmulator
    /// Orchard's lifecycle, as the server uses it.
    public let lifecycle: Lifecycle
    /// Sign-in, sessions, sign-out and deletion, as the server uses them.
    public var accounts: AccountDesk { lifecycle.accounts }
    /// The background jobs. With ``JobDriving/byTest`` nothing runs them but ``runJobs()``.
    public let jobs: JobService
    /// The running Orchard server.
    public let server: RunningService
    /// The test's database (SQLite, or PostgreSQL with `ORCHARD_TEST_DATABASE=postgres`).
    public let testDatabase: TestDatabase
    /// The database client Orchard uses.
    public var database: any DatabaseClient { testDatabase.client }
    /// The HTTP client the tests use.
    public let http: HTTPClient
    /// The configuration Orchard runs with.
    public let configuration: OrchardConfiguration
    /// Every counter, gauge and timer Orchard recorded (swift-metrics' test factory; `/metrics` shows them too).
    public let metrics: TestMetrics
    /// Everything Orchard logged, at every level (see ``loggedLines`` and ``checkLogsHoldNoSecrets(also:)``).
    public let logs: InMemoryLogHandler

    /// Orchard's base URL.
    public var baseURL: String { server.baseURL }

    /// Starts the emulator and Orchard, runs `body`, checks that Orchard's logs hold no secret the emulator handed out
    /// (``checkLogsHoldNoSecrets(also:)``), and stops both whatever happens.
    public static func with(
        configure: @Sendable (inout OrchardConfiguration) -> Void = { _ in },
        wrapDatabase: @Sendable (any DatabaseClient) -> any DatabaseClient = { $0 },
        jobs: JobDriving = .background,
        deadlines: Deadlines = Deadlines(),
        inboxRoom: Int = Lifecycle.inboxRoom,
        _ body: (OrchardHarness) async throws -> Void
    ) async throws {
        StallWatch.start()
        let harness = try await start(
            configure: configure,
            wrapDatabase: wrapDatabase,
            jobs: jobs,
            deadlines: deadlines,
            inboxRoom: inboxRoom
        )
        do {
            // serve's one background start-up task (the email hashes of older accounts) is done before the test begins,
            // so that its statements are in no test's count of what a request sent.
            let filled = await eventually(timeout: 30) {
                (try? await harness.rowCount("orchard_settings WHERE name = 'email_hashes_filled'")) == 1
            }
            guard filled else { throw HarnessError("serve's email-hash backfill did not finish") }
            try await body(harness)
            try await harness.checkLogsHoldNoSecrets()
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    /// Starts the emulator and Orchard, on the test database or on what `wrapDatabase` makes of it, with the
    /// contract's deadlines and the production inbox room unless a test changes them.
    public static func start(
        configure: @Sendable (inout OrchardConfiguration) -> Void = { _ in },
        wrapDatabase: @Sendable (any DatabaseClient) -> any DatabaseClient = { $0 },
        jobs: JobDriving = .background,
        deadlines: Deadlines = Deadlines(),
        inboxRoom: Int = Lifecycle.inboxRoom
    ) async throws -> OrchardHarness {
        let clock = TestWallClock(Date())
        let clientKey = AppleEmulatorConfiguration.makeClientKey()
        let http = HTTPClient.makeOrchardClient()
        let emulator = try AppleEmulator(
            configuration: AppleEmulatorConfiguration(
                teamID: "TEAMID1234",
                keyID: "KEYID12345",
                clientIDs: [clientID, webClientID],
                clientPublicKeyPEM: clientKey.publicKeyPEM,
                clock: clock,
                timeoutHold: .seconds(8)
            ),
            httpClient: http
        )
        let emulatorServer = try await emulator.start()
        let logs = InMemoryLogHandler()
        let logger = makeLogger(keepingIn: logs)
        let testDatabase = try await TestDatabase.make(logger: logger)

        var configuration = OrchardConfiguration()
        configuration.listener.host = "127.0.0.1"
        configuration.listener.port = 0
        configuration.database.url = testDatabase.url
        configuration.vaultKeys = [VaultKey.generate(id: "test1")]
        configuration.apple.teamID = "TEAMID1234"
        configuration.apple.keyID = "KEYID12345"
        configuration.apple.privateKeyPEM = clientKey.privateKeyPEM
        configuration.apple.clientIDs = [clientID, webClientID]
        configuration.apple.baseURL = URL(string: emulatorServer.baseURL)!
        // Every test's requests come from 127.0.0.1: the rate limit is off unless a test turns it on (RateLimitTests).
        configuration.listener.rateLimitPerMinute = 0
        configure(&configuration)

        let metrics = TestMetrics()
        let database = wrapDatabase(testDatabase.client)
        let holder = BuiltHolder()
        let registry = PrometheusCollectorRegistry()
        let server = try await RunningService.start { onServerRunning in
            var dependencies = OrchardDependencies(
                configuration: configuration,
                database: database,
                sessionBackend: testDatabase.sessionBackend,
                httpClient: http,
                clock: clock,
                registry: registry,
                metrics: MultiplexMetricsHandler(factories: [PrometheusMetricsFactory(registry: registry), metrics]),
                logger: logger
            )
            if jobs == .byTest { dependencies.jobTick = nil }
            // As `serve`: the harness's server answers session checks from memory.
            dependencies.answersSessionChecks = configuration.database.sessionCache
            dependencies.deadlines = deadlines
            dependencies.inboxRoom = inboxRoom
            let built = try await buildApplication(
                dependencies,
                onServerRunning: onServerRunning
            )
            holder.set(built.lifecycle, built.jobs)
            return built.application
        }
        return OrchardHarness(
            clock: clock,
            emulator: emulator,
            emulatorServer: emulatorServer,
            lifecycle: holder.get()!.0,
            jobs: holder.get()!.1,
            server: server,
            testDatabase: testDatabase,
            http: http,
            configuration: configuration,
            metrics: metrics,
            logs: logs
        )
    }

    /// Stops Orchard and the emulator and removes the database files.
    public func stop() async {
        await server.stop()
        await emulatorServer.stop()
        await testDatabase.remove()
        try? await http.shutdown()
    }
}

/// Who runs a harness's background jobs.
public enum JobDriving: Sendable {
    /// The server's own loops, on wake-ups and a 1-second tick, as in production.
    case background
    /// Only the test, through ``OrchardHarness/runJobs()``: nothing happens behind its back, so a test can show that
    /// nothing is due without waiting for a tick.
    case byTest
}

extension OrchardHarness {
    /// Drains each background job kind once, as a tick would (passes until one claims less than a full batch), and
    /// returns how many jobs each kind claimed.
    @discardableResult
    public func runJobs() async -> [JobKind: Int] {
        await jobs.runPasses()
    }

    /// Drains only these job kinds once.
    @discardableResult
    public func runJobs(_ kinds: JobKind...) async -> [JobKind: Int] {
        await jobs.runPasses(only: Set(kinds))
    }
}
