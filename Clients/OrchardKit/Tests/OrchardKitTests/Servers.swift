import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A real `orchard apple-emulator` and `orchard serve`, started as processes from `ORCHARD_BINARY` (default: the main
/// package's `.build/debug/orchard`), on loopback, with a SQLite file in a temporary folder.
final class Servers: @unchecked Sendable {
    static let clientID = "com.example.orchard.app"
    /// The environment variable that marks the processes of one run of `scripts/test`.
    static let runMarker = "ORCHARD_TEST_RUN"

    let folder: URL
    let emulatorURL: URL
    let orchardURL: URL
    let databasePath: String
    private let emulator: Process
    private let serve: Process

    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["ORCHARD_BINARY"] { return URL(fileURLWithPath: path) }
        // Clients/OrchardKit/Tests/OrchardKitTests/Servers.swift → the repository's root.
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<5 { root.deleteLastPathComponent() }
        return root.appendingPathComponent(".build/debug/orchard")
    }

    /// Starts both; `validationInterval` is serve's `ORCHARD_REFRESH_VALIDATION_INTERVAL` in seconds.
    ///
    /// Another test's serve may be given the same free port, or take it first: then this serve exits with "Address
    /// already in use" and both are started again on another port (the emulator is told serve's URL when it starts).
    /// Until this serve has bound its port, the other one's answers there are not taken for its own (`holdsListener`).
    static func start(validationInterval: Int = 86_400) async throws -> Servers {
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw Failure("no orchard binary at \(binary.path): build the main package first (swift build), or set ORCHARD_BINARY")
        }
        for attempt in 1...5 {
            if let servers = try await start(validationInterval: validationInterval, retryWhenPortTaken: attempt < 5) {
                return servers
            }
        }
        throw Failure("orchard serve found its port taken five times")
    }

    /// One try of ``start(validationInterval:)``: `nil` when serve's port was taken and `retryWhenPortTaken`.
    private static func start(validationInterval: Int, retryWhenPortTaken: Bool) async throws -> Servers? {
        // The test run's marker in the folder's name too, as the main package's TemporaryDirectory does.
        let run = ProcessInfo.processInfo.environment[runMarker].map { "\($0)-" } ?? ""
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchardkit-\(run)\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let port = try freePort()
        let orchardURL = URL(string: "http://127.0.0.1:\(port)")!

        let emulatorOutput = folder.appendingPathComponent("emulator.log")
        let emulator = try launch(
            [
                "apple-emulator", "--client-ids", clientID, "--write-client-key", folder.appendingPathComponent("key.p8").path,
                "--notify-url", orchardURL.appendingPathComponent("v1/apple/notifications").absoluteString,
            ],
            environment: [:],
            log: emulatorOutput
        )
        let listening = try await poll("the emulator to listen") {
            let text = (try? String(contentsOf: emulatorOutput, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").first { $0.hasPrefix("Apple emulator listening on ") }.map {
                String($0.dropFirst("Apple emulator listening on ".count))
            }
        }
        let settings = ((try? String(contentsOf: emulatorOutput, encoding: .utf8)) ?? "").split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("APPLE_") }
            .reduce(into: [String: String]()) { settings, line in
                let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { settings[parts[0]] = parts[1] }
            }

        let databasePath = folder.appendingPathComponent("orchard.sqlite").path
        var environment = settings
        environment["ORCHARD_PORT"] = String(port)
        environment["ORCHARD_DATABASE_URL"] = "sqlite:\(databasePath)"
        environment["ORCHARD_VAULT_KEYS"] = "k1:" + Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        environment["ORCHARD_REFRESH_VALIDATION_INTERVAL"] = String(validationInterval)
        environment["ORCHARD_RATE_LIMIT_PER_MINUTE"] = "0"
        environment["ORCHARD_LOG_LEVEL"] = "warning"
        let serveLog = folder.appendingPathComponent("serve.log")
        let serve: Process
        do {
            serve = try launch(["serve"], environment: environment, log: serveLog)
        } catch {
            end(emulator)
            throw error
        }
        // From here on the two end with `servers`: at `stop()`, or when it goes because the test threw.
        let servers = Servers(
            folder: folder,
            emulatorURL: URL(string: listening)!,
            orchardURL: orchardURL,
            databasePath: databasePath,
            emulator: emulator,
            serve: serve
        )
        let ready = try await poll("orchard serve to be ready") { () -> Bool? in
            guard serve.isRunning else {
                if retryWhenPortTaken, servers.serveLog.contains("Address already in use") { return false }
                throw Failure("orchard serve exited: \(servers.serveLog)")
            }
            guard holdsListener(port: port, process: serve.processIdentifier) else { return nil }
            let ready = try? await URLSession.shared.data(from: orchardURL.appendingPathComponent("health/ready"))
            return (ready?.1 as? HTTPURLResponse)?.statusCode == 200 ? true : nil
        }
        guard ready else {
            servers.stop()
            return nil
        }
        return servers
    }

    private init(folder: URL, emulatorURL: URL, orchardURL: URL, databasePath: String, emulator: Process, serve: Process) {
        self.folder = folder
        self.emulatorURL = emulatorURL
        self.orchardURL = orchardURL
        self.databasePath = databasePath
        self.emulator = emulator
        self.serve = serve
    }

    var serveLog: String { (try? String(contentsOf: folder.appendingPathComponent("serve.log"), encoding: .utf8)) ?? "" }

    func stop() {
        for process in [serve, emulator] { Self.end(process) }
        try? FileManager.default.removeItem(at: folder)
    }

    deinit {
        for process in [serve, emulator] where process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// SIGTERM, then SIGKILL when it has not exited within 5 s; returns once it has exited.
    private static func end(_ process: Process) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    // MARK: - The emulator's control API

    struct Authorization: Decodable {
        var identityToken: String
        var authorizationCode: String
        var sub: String
        enum CodingKeys: String, CodingKey {
            case sub
            case identityToken = "identity_token"
            case authorizationCode = "authorization_code"
        }
    }

    /// The user's consent on Apple's sheet: an identity token carrying `nonce` and an authorization code; with `orgID`,
    /// a Managed Apple Account of that organization, whose email Apple has not verified.
    func authorize(sub: String, nonce: String, orgID: String? = nil) async throws -> Authorization {
        var user: [String: Any] = ["sub": sub, "email": "\(sub)@privaterelay.appleid.com", "first_name": "Ada", "last_name": "Lovelace"]
        if let orgID {
            user["org_id"] = orgID
            user["email"] = "ada@school.example"
            user["email_verified"] = false
        }
        let body: [String: Any] = ["client_id": Self.clientID, "nonce": nonce, "user": user]
        return try JSONDecoder().decode(Authorization.self, from: try await control("authorize", body))
    }

    /// The user removes the app in their Apple ID settings.
    func revokeGrant(sub: String) async throws {
        _ = try await control("revoke-grant", ["sub": sub, "client_id": Self.clientID])
    }

    /// Apple's server-to-server notification of `type` for `sub`, posted to Orchard; returns Orchard's status.
    func notify(_ type: String, sub: String) async throws -> Int {
        let answer = try await control("notifications", ["type": type, "sub": sub, "client_id": Self.clientID, "send": true])
        return (try JSONSerialization.jsonObject(with: answer) as? [String: Any])?["status"] as? Int ?? 0
    }

    /// Apple's `/auth/revoke` answers `status` for the next `count` calls.
    func failRevocations(status: Int, count: Int) async throws {
        _ = try await control("failures", ["endpoint": "revoke", "status": status, "count": count])
    }

    /// Calls to `/auth/revoke` Apple answered 200.
    func acceptedRevocations() async throws -> Int {
        var request = URLRequest(url: emulatorURL.appendingPathComponent("_emulator/calls"))
        request.httpMethod = "GET"
        let (data, _) = try await URLSession.shared.data(for: request)
        let calls = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["calls"] as? [[String: Any]] ?? []
        return calls.filter { ($0["endpoint"] as? String) == "revoke" && ($0["status"] as? Int) == 200 }.count
    }

    private func control(_ path: String, _ body: [String: Any]) async throws -> Data {
        var request = URLRequest(url: emulatorURL.appendingPathComponent("_emulator/\(path)"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let (data, response) = try await URLSession.shared.data(for: request)
        guard let status = (response as? HTTPURLResponse)?.statusCode, (200..<300).contains(status) else {
            throw Failure(
                "POST /_emulator/\(path) answered \((response as? HTTPURLResponse)?.statusCode ?? 0): \(String(decoding: data, as: UTF8.self))"
            )
        }
        return data
    }

    /// Runs SQL on Orchard's SQLite file with Python's sqlite3 (what the operator's own tools would see).
    func sql(_ statement: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()", databasePath, statement,
        ]
        try Self.spawnCleanly(process)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure("python3 sqlite3 failed on: \(statement)") }
    }

    // MARK: - Processes

    private static func launch(_ arguments: [String], environment: [String: String], log: URL) throws -> Process {
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var base = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory()]
        // scripts/test finds what a test left running by this marker.
        if let marker = ProcessInfo.processInfo.environment[runMarker] { base[runMarker] = marker }
        process.environment = base.merging(environment) { $1 }
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try spawnCleanly(process)
        return process
    }

    /// Starts `process` as a shell would, with no signal blocked and every disposition the default: the test threads
    /// block SIGTERM, and a child that inherited that would never receive `terminate()`. (The main package's
    /// OrchardTesting has the same as `ChildProcess`; this package depends on nothing of the server.)
    private static func spawnCleanly(_ process: Process) throws {
        guard let executable = process.executableURL else { throw Failure("no executable set") }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["--default-signal", "--", executable.path] + (process.arguments ?? [])
        let outcome = SpawnOutcome(process)
        let thread = Thread {
            var none = sigset_t()
            sigemptyset(&none)
            pthread_sigmask(SIG_SETMASK, &none, nil)
            outcome.finish(Result { try outcome.process.run() })
        }
        thread.start()
        try outcome.wait().get()
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Failure("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether `process` holds the socket listening on `port`, from Linux's `/proc` (elsewhere `true`). (The main
    /// package's OrchardTesting has the same as `ListeningSocket`; this package depends on nothing of the server.)
    private static func holdsListener(port: Int, process: Int32) -> Bool {
        #if os(Linux)
        let suffix = ":" + String(format: "%04X", port)
        var inodes = Set<String>()
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                if fields.count > 9, fields[3] == "0A", fields[1].hasSuffix(suffix) { inodes.insert("socket:[\(fields[9])]") }
            }
        }
        let folder = "/proc/\(process)/fd"
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return descriptors.contains { inodes.contains((try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\($0)")) ?? "") }
        #else
        return true
        #endif
    }
}

/// The result of a spawn on its own thread, handed back to the caller.
private final class SpawnOutcome: @unchecked Sendable {
    let process: Process
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<Void, any Error> = .success(())

    init(_ process: Process) {
        self.process = process
    }

    func finish(_ result: Result<Void, any Error>) {
        self.result = result
        done.signal()
    }

    func wait() -> Result<Void, any Error> {
        done.wait()
        return result
    }
}

/// A test step that did not go as expected.
struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` every 50 ms until it returns a value, for at most `timeout` seconds.
func poll<T>(_ what: String, timeout: Double = 30, _ condition: () async throws -> T?) async throws -> T {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if let value = try await condition() { return value }
        try await Task.sleep(nanoseconds: 50_000_000)
    }
    throw Failure("timed out waiting for \(what)")
}
