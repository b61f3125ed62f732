import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardServer

/// The connection watcher on its own, with short timeouts and without Hummingbird's idle timeout: the contract's bounds
/// on idle and slow clients hold by the watcher alone, so a failure of the framework's timer cannot leave a connection
/// open for good. (`SlowClientTests` holds the whole server to the contract's 10 s and 60 s.)
@Suite("The connection watcher's own deadlines")
struct ConnectionDeadlinesTests {
    static let deadlines = ConnectionDeadlines(headTimeout: .seconds(1), bodyTimeout: .seconds(1), idleTimeout: .seconds(2))
    static let request = Array("GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)

    /// Runs a server answering `GET /x` whose only deadlines are the watcher's, for `body`.
    static func withServer(_ body: (Int) async throws -> Void) async throws {
        let router = Router()
        router.get("/x") { _, _ in "ok" }
        let port = Mutex<Int?>(nil)
        let server = HTTPServerBuilder { responder in
            // Hummingbird's own idle timeout left out: what closes an idle connection here is the watcher.
            deadlines.guarding(
                HTTP1Channel(responder: responder, configuration: .init(additionalChannelHandlers: deadlines.watchers()))
            )
        }
        let app = Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } },
            logger: Logger(label: "watcher-test") { _ in SwiftLogNoOpLogHandler() }
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            defer { group.cancelAll() }
            let started = await eventually(timeout: 30) { port.withLock { $0 } != nil }
            guard started, let bound = port.withLock({ $0 }) else { throw ServerDidNotStart() }
            try await body(bound)
        }
    }

    struct ServerDidNotStart: Error {}

    @Test("a kept-alive connection with nothing in progress is closed after the idle timeout, not before, by the watcher alone")
    func idle() async throws {
        try await Self.withServer { port in
            let result = try await RawHTTP.exchange(
                port: port,
                answered: [Self.request, Self.request],
                thenSending: [],
                expectingCloseAfter: .seconds(2),
                closeWithin: .seconds(20)
            )
            #expect(result.closed(between: .milliseconds(1_900), and: .milliseconds(3_000)), "\(result.closedAfter as Any), \(result.timersLate)")
            #expect(String(decoding: result.received, as: UTF8.self).components(separatedBy: "HTTP/1.1 200").count == 3)
        }
    }

    @Test("a request begun on an idle connection is held to the head timeout from its first byte, not to the idle timeout")
    func headAfterIdle() async throws {
        try await Self.withServer { port in
            let result = try await RawHTTP.exchange(
                port: port,
                answered: [Self.request],
                thenSending: Array("GET /x HT".utf8),
                expectingCloseAfter: .seconds(1),
                closeWithin: .seconds(20)
            )
            #expect(result.closed(between: .milliseconds(900), and: .milliseconds(1_900)), "\(result.closedAfter as Any), \(result.timersLate)")
        }
    }
}
