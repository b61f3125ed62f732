import Accounts
import AppleID
import AppleIDEmulator
import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import OrchardServer
import Prometheus
import SQLKit
import ServiceLifecycle
import Storage
import UnixSignals

/// The scripted story `orchard demo` tells, against real sockets, a real SQLite file and the emulator.
struct Demo {
    let keepServing: Bool
    let clientID = "com.example.orchard.demo"
    let webClientID = "com.example.orchard.demo.web"

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .error
            return handler
        }
        let http = HTTPClient.makeOrchardClient()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orchard-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let databasePath = directory.appendingPathComponent("orchard.sqlite").path
        let logger = Logger(label: "orchard.demo")

        let clientKey = AppleEmulatorConfiguration.makeClientKey()
        let receivingKey = AppleEmulatorConfiguration.makeClientKey()
        let clock = DemoClock()
        let emulator = try AppleEmulator(
            configuration: AppleEmulatorConfiguration(
                teamID: "DEMOTEAM01",
                keyID: "DEMOKEY001",
                clientIDs: [clientID, webClientID],
                clientPublicKeyPEM: clientKey.publicKeyPEM,
                clock: clock,
                // The team the app moves to in the app-transfer act.
                otherTeams: [
                    EmulatorTeam(
                        teamID: DemoReceivingSide.teamID,
                        keyID: DemoReceivingSide.keyID,
                        clientPublicKeyPEM: receivingKey.publicKeyPEM,
                        clientIDs: ["com.example.other-team.app"]
                    )
                ]
            ),
            httpClient: http
        )
        let emulatorServer = try await emulator.start()

        var configuration = OrchardConfiguration()
        configuration.database.url = .sqlite(path: databasePath)
        configuration.vaultKeys = [VaultKey.generate(id: "demo")]
        configuration.apple.teamID = "DEMOTEAM01"
        configuration.apple.keyID = "DEMOKEY001"
        configuration.apple.privateKeyPEM = clientKey.privateKeyPEM
        configuration.apple.clientIDs = [clientID, webClientID]
        configuration.webFlow.clientID = webClientID
        // The browser reaches "Apple" as localhost and Orchard as 127.0.0.1: two sites, as Apple and an app are.
        configuration.apple.baseURL = URL(string: "http://localhost:\(emulatorServer.port)")!
        let database = try await SQLiteDatabaseClient.open(path: databasePath, logger: logger)
        let server = try await startOrchard(configuration, database: database, http: http, clock: clock, logger: logger)

        Console.line("Orchard demo")
        Console.line("  Apple emulator: \(configuration.apple.baseURL.absoluteString)")
        Console.line("  Orchard:        \(server.baseURL)")
        Console.line("  account page:   \(server.baseURL)/account")
        Console.line("  database:       \(databasePath)")
        let script = DemoScript(
            http: http,
            orchard: server.baseURL,
            emulator: emulator,
            clientID: clientID,
            webClientID: webClientID,
            database: database,
            clock: clock,
            receivingSide: DemoReceivingSide(
                demo: self,
                sendingConfiguration: configuration,
                privateKeyPEM: receivingKey.privateKeyPEM,
                directory: directory,
                logger: logger
            )
        )
        do {
            try await script.run()
        } catch {
            Console.line("demo failed: \(error)")
            await server.stop()
            await emulatorServer.stop()
            await database.close()
            try? await http.shutdown()
            throw error
        }

        if keepServing {
            Console.line()
            Console.line("Serving until Ctrl-C:")
            Console.line("  account page:   \(server.baseURL)/account  (open it in a browser: Sign in with Apple consents as Jane Appleseed)")
            Console.line("  Orchard:        \(server.baseURL)  (try \(server.baseURL)/openapi.yaml)")
            Console.line("  Apple emulator: \(configuration.apple.baseURL.absoluteString)  (control API under /_emulator/)")
            let waiter = ServiceGroup(
                configuration: .init(
                    services: [WaitForShutdown()],
                    gracefulShutdownSignals: [.sigint, .sigterm],
                    logger: logger
                )
            )
            try await waiter.run()
        }
        await server.stop()
        await emulatorServer.stop()
        await database.close()
        try? await http.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }
}

extension Demo {
    /// Starts Orchard on a free loopback port whose callback is the web flow's `APPLE_REDIRECT_URI` (the port must be
    /// known before the server is built), trying another port if that one was taken meanwhile.
    func startOrchard(
        _ base: OrchardConfiguration,
        database: SQLiteDatabaseClient,
        http: HTTPClient,
        clock: DemoClock,
        logger: Logger
    ) async throws -> RunningService {
        var lastError: any Error = DemoError("no free loopback port")
        for _ in 0..<5 {
            guard let port = LoopbackPort.free() else { continue }
            var configuration = base
            configuration.listener.host = "127.0.0.1"
            configuration.listener.port = port
            configuration.webFlow.redirectURI = URL(string: "http://127.0.0.1:\(port)/v1/auth/apple/callback")!
            let dependencies = OrchardDependencies(
                configuration: configuration,
                database: database,
                sessionBackend: database.sessionBackend,
                httpClient: http,
                clock: clock,
                registry: PrometheusCollectorRegistry(),
                logger: logger
            )
            do {
                return try await RunningService.start { onServerRunning in
                    try await buildApplication(dependencies, onServerRunning: onServerRunning).application
                }
            } catch {
                lastError = error
            }
        }
        throw lastError
    }
}

/// Waits for Ctrl-C under `--serve`.
private struct WaitForShutdown: Service {
    func run() async throws {
        try? await gracefulShutdown()
    }
}
