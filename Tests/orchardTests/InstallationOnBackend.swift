import AsyncHTTPClient
import Foundation
import NIOSSL
import OrchardTesting
import Storage

/// An installation for `orchard` commands and `serve` processes on the selected backend: the temporary folder, the
/// emulator and the environment of ``ServeProcessTests/Setup``, with the database on PostgreSQL when
/// `ORCHARD_TEST_DATABASE=postgres` (a database of its own, removed by ``stop()``), on SQLite in the folder otherwise.
struct InstallationOnBackend {
    let base: ServeProcessTests.Setup
    let database: TestDatabase?
    let environment: [String: String]

    static func start() async throws -> InstallationOnBackend {
        let base = try await ServeProcessTests.Setup.start()
        let database = TestDatabase.selectedBackend == .postgres ? try await TestDatabase.make(.postgres) : nil
        var environment = base.environment
        if let database, case .postgres(let url) = database.url { environment["ORCHARD_DATABASE_URL"] = url }
        return InstallationOnBackend(base: base, database: database, environment: environment)
    }

    /// `orchard serve` on a new installation, in a process of its own, for `body`; `extra` goes over the installation's
    /// environment, and `http` (the installation's plain client by default) is what waits for serve to be ready. The
    /// installation is removed afterwards, also when `body` throws (serve is killed when the test lets go of it).
    static func withServe(
        _ extra: [String: String] = [:],
        http: HTTPClient? = nil,
        _ body: (ServeProcess, InstallationOnBackend) async throws -> Void
    ) async throws {
        let installation = try await InstallationOnBackend.start()
        do {
            let serve = try await ServeProcess.start(
                environment: installation.environment.merging(extra) { $1 },
                logDirectory: installation.base.directory.path,
                http: http ?? installation.base.http
            )
            try await body(serve, installation)
            await serve.terminate()
        } catch {
            await installation.stop()
            throw error
        }
        await installation.stop()
    }

    /// ``withServe(_:http:_:)`` with built-in TLS on `issued`; `body` also gets the HTTPS client that waited for serve, which
    /// trusts only `authority` and not the host name (it asks for 127.0.0.1), and is shut down afterwards.
    static func withServe(
        _ extra: [String: String] = [:],
        tls issued: TestCertificateAuthority.Issued,
        from authority: TestCertificateAuthority,
        _ body: (ServeProcess, HTTPClient) async throws -> Void
    ) async throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(authority.certificateFile)
        tls.certificateVerification = .noHostnameVerification
        let https = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
        let files = ["ORCHARD_TLS_CERT_FILE": issued.certificateFile, "ORCHARD_TLS_KEY_FILE": issued.keyFile]
        do {
            try await withServe(extra.merging(files) { $1 }, http: https) { serve, _ in try await body(serve, https) }
        } catch {
            try? await https.shutdown()
            throw error
        }
        try await https.shutdown()
    }

    /// Runs `orchard` with the installation's environment (and `extra` over it).
    func run(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> OrchardProcess.Result {
        try await OrchardProcess.runInBackground(arguments, environment: environment.merging(extra) { $1 }, timeout: 300)
    }

    /// Removes the database and the folder, and stops the emulator.
    func stop() async {
        await database?.remove()
        await base.stop()
    }
}
