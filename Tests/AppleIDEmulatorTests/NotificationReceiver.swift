import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A tiny HTTP server standing in for Orchard's notification endpoint: it keeps every body posted to `/notify`.
final class NotificationReceiver: Sendable {
    private let bodies = Mutex<[Data]>([])
    private let status: HTTPResponse.Status

    init(status: HTTPResponse.Status = .ok) {
        self.status = status
    }

    /// The bodies received so far.
    var received: [Data] { bodies.withLock { $0 } }

    /// Runs the receiver, calls `body` with its `/notify` URL, and stops it.
    func run(_ body: (String) async throws -> Void) async throws {
        let router = Router()
        router.post("notify") { request, _ -> Response in
            var request = request
            let buffer = try await request.collectBody(upTo: 1 << 20)
            self.bodies.withLock { $0.append(Data(buffer.readableBytesView)) }
            return Response(status: self.status)
        }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "test.notification-receiver")
        logger.logLevel = .warning
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger
        )
        let group = ServiceGroup(configuration: .init(services: [app], logger: app.logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            let port = await iterator.next() ?? 0
            do {
                try await body("http://127.0.0.1:\(port)/notify")
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}
