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

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .error
            return handler
        }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orchard-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let databasePath = directory.appendingPathComponent("orchard.sqlite").path
        let logger = Logger(label: "orchard.demo")

        let clientKey = AppleEmulatorConfiguration.makeClientKey()
        let emulator = try AppleEmulator(
            configuration: AppleEmulatorConfiguration(
                teamID: "DEMOTEAM01",
                keyID: "DEMOKEY001",
                clientIDs: [clientID],
                clientPublicKeyPEM: clientKey.publicKeyPEM
            ),
            httpClient: http
        )
        let emulatorServer = try await emulator.start()

        var configuration = OrchardConfiguration()
        configuration.port = 0
        configuration.database = .sqlite(path: databasePath)
        configuration.vaultKeys = [VaultKey.generate(id: "demo")]
        configuration.appleTeamID = "DEMOTEAM01"
        configuration.appleKeyID = "DEMOKEY001"
        configuration.applePrivateKeyPEM = clientKey.privateKeyPEM
        configuration.appleClientIDs = [clientID]
        configuration.appleBaseURL = URL(string: emulatorServer.baseURL)!
        let database = try await SQLiteDatabaseClient.open(path: databasePath, logger: logger)
        let dependencies = OrchardDependencies(
            configuration: configuration,
            database: database,
            httpClient: http,
            registry: PrometheusCollectorRegistry(),
            logger: logger
        )
        let server = try await RunningService.start { onServerRunning in
            try await buildApplication(dependencies, onServerRunning: onServerRunning).application
        }

        Console.line("Orchard demo")
        Console.line("  Apple emulator: \(emulatorServer.baseURL)")
        Console.line("  Orchard:        \(server.baseURL)")
        Console.line("  database:       \(databasePath)")
        let script = DemoScript(http: http, orchard: server.baseURL, emulator: emulator, clientID: clientID, database: database)
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
            Console.line("  Orchard:        \(server.baseURL)  (try \(server.baseURL)/openapi.yaml)")
            Console.line("  Apple emulator: \(emulatorServer.baseURL)  (control API under /_emulator/)")
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

/// Waits for Ctrl-C under `--serve`.
private struct WaitForShutdown: Service {
    func run() async throws {
        try? await gracefulShutdown()
    }
}
