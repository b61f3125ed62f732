import Logging
public import NIOCore
public import ServiceLifecycle
import Synchronization

/// An HTTP application running in the background (for `orchard demo` and tests), on a port the system chose.
public final class RunningService: Sendable {
    /// The port it listens on.
    public let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    private init(port: Int, group: ServiceGroup, task: Task<Void, any Error>) {
        self.port = port
        self.group = group
        self.task = task
    }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Builds the service with an `onServerRunning` hook, runs it, and returns once it listens.
    public static func start(
        _ build: (@escaping @Sendable (any Channel) async -> Void) async throws -> any Service
    ) async throws -> RunningService {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let service = try await build { channel in
            continuation.yield(channel.localAddress?.port ?? 0)
            continuation.finish()
        }
        let group = ServiceGroup(configuration: .init(services: [service], logger: Logger(label: "orchard.service")))
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            await group.triggerGracefulShutdown()
            _ = try? await task.value
            throw CancellationError()
        }
        return RunningService(port: port, group: group, task: task)
    }

    /// Shuts it down gracefully and waits until it stopped.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}
