public import AsyncHTTPClient
import Dispatch
public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// `orchard serve` running as a separate process, as a user deploys it: for crash (`kill -9`) and restart tests.
public struct ServeProcess: @unchecked Sendable {
    // Process is not Sendable; this wrapper only touches it from the test's own task.
    private let process: Process
    /// Ends the process with the test's last copy of this value, also when the test threw or failed before it did.
    private let lifetime: EndsWithItsTest
    /// The port it listens on.
    public let port: Int
    /// `https` when it was started with built-in TLS (`ORCHARD_TLS_CERT_FILE`), else `http`.
    public let scheme: String
    private let log: URL

    /// `http://127.0.0.1:PORT` (`https://` with built-in TLS).
    public var baseURL: String { "\(scheme)://127.0.0.1:\(port)" }

    /// What the process wrote to standard error so far (its logs).
    public var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// A free loopback port below the kernel's ephemeral range, so that a test which kills serve and starts it again on
    /// the same port cannot find it taken meanwhile by the local end of some outgoing connection (which the kernel picks
    /// from the ephemeral range), and fail with "Address already in use".
    public static func freePort() async throws -> Int {
        let ephemeralStart =
            (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
            .flatMap { $0.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } } ?? 32768
        let range = 10_000..<max(ephemeralStart, 10_001)
        for _ in 0..<100 {
            let candidate = Int.random(in: range)
            guard
                let channel = try? await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .bind(host: "127.0.0.1", port: candidate).get()
            else { continue }
            try await channel.close()
            return candidate
        }
        throw ServeProcessError("no free loopback port below \(range.upperBound)")
    }

    /// Starts `orchard serve` with `environment` (plus `ORCHARD_PORT`) and waits until it answers 200 at `/health/ready`
    /// from a socket it holds itself (not another test's serve on the same port); over HTTPS when `environment` sets
    /// `ORCHARD_TLS_CERT_FILE`, and `http` must then trust its certificate. When no `port` is given and the one picked was
    /// taken before serve could bind it, serve is started again on another.
    ///
    /// - Parameters:
    ///   - executable: The `orchard` binary (default: this build's).
    ///   - umask: A process umask to start it under (as `umask` takes it, e.g. `022`), else the test's own.
    public static func start(
        environment: [String: String],
        port: Int? = nil,
        logDirectory: String,
        http: HTTPClient,
        executable: URL = OrchardProcess.executable,
        umask: String? = nil
    ) async throws -> ServeProcess {
        var attempts = 0
        while true {
            attempts += 1
            let chosen: Int
            if let port {
                chosen = port
            } else {
                chosen = try await freePort()
            }
            let serve = try launch(environment: environment, port: chosen, logDirectory: logDirectory, executable: executable, umask: umask)
            do {
                try await serve.waitUntilReady(http: http)
                return serve
            } catch let error as ServeProcessError where port == nil && attempts < 5 && error.portTaken {
                continue
            }
        }
    }

    private static func launch(
        environment: [String: String],
        port: Int,
        logDirectory: String,
        executable: URL,
        umask: String?
    ) throws -> ServeProcess {
        let log = URL(fileURLWithPath: logDirectory).appendingPathComponent("serve-\(port)-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        if let umask {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "umask \(umask) && exec \"$0\" serve", executable.path]
        } else {
            process.executableURL = executable
            process.arguments = ["serve"]
        }
        var env = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory(), "ORCHARD_PORT": String(port)]
        env.merge(environment) { $1 }
        process.environment = env
        process.standardOutput = try FileHandle(forWritingTo: log)
        process.standardError = try FileHandle(forWritingTo: log)
        try ChildProcess.start(process)
        let scheme = environment["ORCHARD_TLS_CERT_FILE"] == nil ? "http" : "https"
        return ServeProcess(process: process, lifetime: EndsWithItsTest(process), port: port, scheme: scheme, log: log)
    }

    /// Polls `/health/ready` until this process answers 200 on a socket it holds, for at most 60 s.
    private func waitUntilReady(http: HTTPClient) async throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            guard process.isRunning else {
                let text = logText
                throw ServeProcessError("orchard serve exited: \(text)", portTaken: text.contains("Address already in use"))
            }
            var request = HTTPClientRequest(url: "\(baseURL)/health/ready")
            request.method = .GET
            if ListeningSocket.isHeld(port: port, byProcess: process.processIdentifier),
                let response = try? await http.execute(request, timeout: .seconds(2)), response.status.code == 200
            {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        await kill()
        throw ServeProcessError("orchard serve did not become ready: \(logText)")
    }

    /// `kill -9`: no chance to clean up. Waits for the exit on a thread of its own, not the concurrency pool's.
    public func kill() async {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        await waitForExit()
    }

    /// SIGTERM, then waits for the graceful shutdown (off the concurrency pool); returns the exit status.
    @discardableResult
    public func terminate() async -> Int32 {
        if process.isRunning { process.terminate() }
        await waitForExit()
        return process.terminationStatus
    }

    /// Waits for the exit (off the concurrency pool), after a signal sent with ``send(_:)``; returns the exit status.
    public func exitStatus() async -> Int32 {
        await waitForExit()
        return process.terminationStatus
    }

    /// Whether the process still holds its listening socket: false once a graceful shutdown has stopped accepting
    /// connections (or the process has exited).
    public var isListening: Bool {
        process.isRunning && ListeningSocket.isHeld(port: port, byProcess: process.processIdentifier)
    }

    /// Sends `signal` (`SIGSTOP`, `SIGCONT`, ...).
    public func send(_ signal: Int32) {
        if process.isRunning { Foundation.kill(process.processIdentifier, signal) }
    }

    /// Whether the process has exited.
    public var hasExited: Bool { !process.isRunning }

    /// The CPU time the process has used so far (user and system, from `/proc/PID/stat`), or `nil` once it has exited.
    public var cpuSeconds: Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3, utime and stime are fields 14 and 15 (in clock ticks).
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    private func waitForExit() async {
        let process = self.process
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                process.waitUntilExit()
                continuation.resume()
            }
        }
    }
}

/// Kills its process, if it still runs, when the last ``ServeProcess`` copy holding it goes: a test that throws before
/// it ended its `serve` does not leave it running until the test process exits.
private final class EndsWithItsTest: @unchecked Sendable {
    private let process: Process
    init(_ process: Process) { self.process = process }
    deinit {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
    }
}

/// `orchard serve` did not start.
public struct ServeProcessError: Error, CustomStringConvertible {
    /// What happened.
    public let description: String
    /// Whether serve exited because its port was taken.
    let portTaken: Bool
    init(_ description: String, portTaken: Bool = false) {
        self.description = description
        self.portTaken = portTaken
    }
}
