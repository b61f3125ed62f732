import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// An emulator whose HTTP server runs in the background, for tests and the demo.
///
/// Stop it with ``stop()`` (or use ``AppleEmulator/withRunningServer(host:port:_:)``, which does): a server left
/// running keeps its port until the process ends.
public final class RunningEmulator: Sendable {
    /// The emulator being served.
    public let emulator: AppleEmulator
    /// Where it listens, e.g. `http://127.0.0.1:54321`: the `APPLE_BASE_URL` for an Orchard talking to it.
    public let baseURL: String
    /// The port it listens on.
    public let port: Int
    private let serviceGroup: ServiceGroup
    private let task: Task<Void, any Error>

    /// Wraps a server started by ``AppleEmulator/start(host:port:)``.
    init(emulator: AppleEmulator, baseURL: String, port: Int, serviceGroup: ServiceGroup, task: Task<Void, any Error>) {
        self.emulator = emulator
        self.baseURL = baseURL
        self.port = port
        self.serviceGroup = serviceGroup
        self.task = task
    }

    /// Shuts the server down gracefully (held requests are let go) and waits until it has stopped.
    public func stop() async {
        await serviceGroup.triggerGracefulShutdown()
        _ = await task.result
    }
}

extension AppleEmulator {
    /// Starts the HTTP server in the background and returns once it listens.
    ///
    /// - Parameters:
    ///   - host: Where to listen; loopback by default.
    ///   - port: The port; 0 (the default) picks a free one, see ``RunningEmulator/port``.
    /// - Throws: The server's error when it cannot listen (e.g. the port is taken).
    public func start(host: String = "127.0.0.1", port: Int = 0) async throws -> RunningEmulator {
        let (addresses, continuation) = AsyncStream.makeStream(of: (baseURL: String, port: Int).self)
        let application = makeApplication(host: host, port: port) { baseURL in
            continuation.yield((baseURL, Int(baseURL.split(separator: ":").last ?? "") ?? port))
            continuation.finish()
        }
        let serviceGroup = ServiceGroup(configuration: .init(services: [application], logger: logger))
        let task = Task(executorPreference: EmulatorExecutor.shared) {
            defer { continuation.finish() }
            try await serviceGroup.run()
        }
        var iterator = addresses.makeAsyncIterator()
        guard let address = await iterator.next() else {
            try await task.value
            throw AppleEmulatorError(.serverDidNotStart, reason: "the server stopped before it listened")
        }
        return RunningEmulator(emulator: self, baseURL: address.baseURL, port: address.port, serviceGroup: serviceGroup, task: task)
    }

    /// Runs `body` with the HTTP server listening, then stops the server, whether `body` returns or throws.
    public func withRunningServer<T: Sendable>(
        host: String = "127.0.0.1",
        port: Int = 0,
        _ body: (RunningEmulator) async throws -> T
    ) async throws -> T {
        let running = try await start(host: host, port: port)
        do {
            let result = try await body(running)
            await running.stop()
            return result
        } catch {
            await running.stop()
            throw error
        }
    }
}
