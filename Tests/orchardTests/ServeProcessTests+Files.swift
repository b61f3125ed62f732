import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import OrchardTesting
import Testing

extension ServeProcessTests {
    /// The permission bits of `path`, or `nil` when it does not exist.
    static func mode(_ path: String) -> Int? {
        guard let permissions = try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int else { return nil }
        return permissions & 0o777
    }

    @Test("under umask 022, the SQLite database and its -wal and -shm files are created 0600, and an older 0644 file is tightened")
    func databaseFilesOwnerOnly() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let database = setup.directory.file("orchard.sqlite")
        let serve = try await ServeProcess.start(
            environment: setup.environment,
            logDirectory: setup.directory.path,
            http: setup.http,
            umask: "022"
        )
        _ = try await setup.client(serve).signIn(setup.emulator.makeUser(), clientID: "com.example.orchard.app")
        for file in [database, database + "-wal", database + "-shm"] {
            #expect(Self.mode(file) == 0o600, "\(file): \(Self.mode(file).map { String($0, radix: 8) } ?? "missing")")
        }
        await serve.kill()

        // A database an older Orchard left readable by others is its owner's only after the next start.
        for file in [database, database + "-wal", database + "-shm"] where Self.mode(file) != nil {
            chmod(file, 0o644)
        }
        let again = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.directory.path, http: setup.http, umask: "022")
        #expect(Self.mode(database) == 0o600)
        await again.kill()
    }

    @Test("a binary installed without its resources directory answers GET /openapi.yaml 404 not_found and serves everything else")
    func openAPIDocumentMissing() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let binary = URL(fileURLWithPath: setup.directory.file("orchard"))
        do {
            try FileManager.default.linkItem(at: OrchardProcess.executable, to: binary)
        } catch {
            try FileManager.default.copyItem(at: OrchardProcess.executable, to: binary)
        }
        let serve = try await ServeProcess.start(
            environment: setup.environment,
            logDirectory: setup.directory.path,
            http: setup.http,
            executable: binary
        )
        let client = setup.client(serve)
        let document = try await client.request(.GET, "/openapi.yaml")
        #expect(document.status == 404)
        #expect(document.code == "not_found")
        #expect(try await client.request(.GET, "/health/live").status == 200)
        #expect(try await client.request(.POST, "/v1/auth/apple/nonce").status == 201)
        #expect(serve.logText.contains("the OpenAPI document is not installed beside the binary"))
        #expect(!serve.hasExited)
        await serve.kill()
    }
}
