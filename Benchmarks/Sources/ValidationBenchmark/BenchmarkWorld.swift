import Accounts
import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import Logging
import OrchardServer
import OrchardTesting
import Prometheus
import Storage

/// The emulator and Orchard's lifecycle in one process, wired as `orchard serve` wires them, over a fresh SQLite file,
/// with one ``TestWallClock`` that stands still while the benchmark runs.
struct BenchmarkWorld: Sendable {
    /// The client id every account belongs to.
    static let clientID = "com.example.orchard.app"

    /// The clock Orchard and the emulator share; it stands at the moment the world started.
    let clock: TestWallClock
    /// The Apple stand-in.
    let emulator: AppleEmulator
    /// Its HTTP server.
    let emulatorServer: RunningEmulator
    /// Orchard's lifecycle over an HTTP client configured as `orchard serve` configures it.
    let accounts: Lifecycle
    /// Orchard's lifecycle over an HTTP client with a wider connection pool; nil when not asked for.
    let wideAccounts: Lifecycle?
    /// The database both lifecycles use.
    let database: SQLiteDatabaseClient
    /// A vault with Orchard's keys, to seal what the loader inserts.
    let vault: TokenVault
    /// Where the database lives.
    let directory: TemporaryDirectory
    private let clients: [HTTPClient]

    /// Starts the emulator with `latency`, opens and migrates a new database, and builds the lifecycle with
    /// ``OrchardServer/buildLifecycle(_:)``; with `widePool` above 0, a second lifecycle whose client keeps that many
    /// connections per host.
    static func start(latency: Duration, widePool: Int) async throws -> BenchmarkWorld {
        var logger = Logger(label: "orchard.benchmark")
        logger.logLevel = .error
        let clock = TestWallClock(Date())
        let clientKey = AppleEmulatorConfiguration.makeClientKey()
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let emulator = try AppleEmulator(
            configuration: AppleEmulatorConfiguration(
                teamID: "TEAMID1234",
                keyID: "KEYID12345",
                clientIDs: [clientID],
                clientPublicKeyPEM: clientKey.publicKeyPEM,
                latency: latency,
                clock: clock
            ),
            httpClient: http,
            logger: logger
        )
        let emulatorServer = try await emulator.start()
        let directory = try TemporaryDirectory(prefix: "orchard-benchmark")

        var configuration = OrchardConfiguration()
        configuration.database.url = .sqlite(path: directory.file("orchard.sqlite"))
        configuration.vaultKeys = [VaultKey.generate(id: "bench1")]
        configuration.apple.teamID = "TEAMID1234"
        configuration.apple.keyID = "KEYID12345"
        configuration.apple.privateKeyPEM = clientKey.privateKeyPEM
        configuration.apple.clientIDs = [clientID]
        configuration.apple.baseURL = URL(string: emulatorServer.baseURL)!
        let database = try await SQLiteDatabaseClient.open(path: directory.file("orchard.sqlite"), logger: logger)

        func lifecycle(_ client: HTTPClient) async throws -> Lifecycle {
            let dependencies = OrchardDependencies(
                configuration: configuration,
                database: database,
                sessionBackend: database.sessionBackend,
                httpClient: client,
                clock: clock,
                registry: PrometheusCollectorRegistry(),
                logger: logger
            )
            return try await buildLifecycle(dependencies).0
        }
        var clients = [http]
        var wideAccounts: Lifecycle?
        if widePool > 0 {
            var wide = HTTPClient.Configuration()
            wide.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = widePool
            let wideClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: wide)
            clients.append(wideClient)
            wideAccounts = try await lifecycle(wideClient)
        }
        return BenchmarkWorld(
            clock: clock,
            emulator: emulator,
            emulatorServer: emulatorServer,
            accounts: try await lifecycle(http),
            wideAccounts: wideAccounts,
            database: database,
            vault: TokenVault(keys: configuration.vaultKeys),
            directory: directory,
            clients: clients
        )
    }

    /// Stops the emulator, closes the database and the HTTP clients, and removes the database files.
    func stop() async {
        await emulatorServer.stop()
        await database.close()
        for client in clients {
            try? await client.shutdown()
        }
        directory.remove()
    }
}
