import Foundation
import Hummingbird
import HummingbirdCore
import InMemoryLogging
import Logging
import NIOCore
import NIOPosix
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardServer

/// The connection watcher on its own, with short timeouts and without Hummingbird's idle timeout: the contract's bounds
/// on idle and slow clients hold by the watcher alone, so a failure of the framework's timer cannot leave a connection
/// open for good. (`SlowClientTests` holds the whole server to the contract's 10 s and 60 s.)
///
/// The server runs in the test process, so each close is judged from the moment the watcher's rule counts from, as the
/// watcher saw it: its log line says how long after it armed the deadline it closed the connection. The client's own
/// count starts earlier (when it wrote, or read its last answer) and also holds the time this process, busy with a
/// parallel pass, took to take the connection and its bytes up: once 9 s for a 2 s deadline, with every event loop
/// and the concurrency pool running on time. It bounds the close from below (never before the deadline) and says
/// that a close came at all; the whole server's deadlines are measured from the client, with `orchard serve` in a
/// process of its own, in `SlowClientTests`.
@Suite("The connection watcher's own deadlines", .backendIndependent)
struct ConnectionDeadlinesTests {
    static let deadlines = ConnectionDeadlines(headTimeout: .seconds(1), bodyTimeout: .seconds(1), idleTimeout: .seconds(2))
    static let request = Array("GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)

    /// What the watcher logged when it closed a connection: which deadline passed, and how long after it armed it.
    struct WatcherClose: CustomStringConvertible {
        let deadline: String
        let armedSeconds: Double

        var description: String { "\(deadline) deadline, closed \(armedSeconds) s after it was armed" }

        /// The closes `logs` recorded, in order.
        static func all(in logs: InMemoryLogHandler) -> [WatcherClose] {
            logs.entries.compactMap { entry in
                let message = "\(entry.message)"
                guard message.hasPrefix("closed a connection: its "), case .string(let armed)? = entry.metadata["deadline.armed_seconds"],
                    let seconds = Double(armed)
                else { return nil }
                let deadline = message.dropFirst("closed a connection: its ".count).prefix { $0 != " " }
                return WatcherClose(deadline: String(deadline), armedSeconds: seconds)
            }
        }
    }

    /// Whether the watcher closed the connection by `deadline`, once, between `earliest` and `latest` (plus how late this
    /// process's event loops ran, which run the watcher's timer) after it armed it, and the client saw the close no
    /// earlier than `earliest` after its own reference moment.
    static func closedByWatcher(
        _ result: RawHTTP.Exchange,
        _ logs: InMemoryLogHandler,
        deadline: String,
        between earliest: Duration,
        and latest: Duration
    ) -> Bool {
        let closes = WatcherClose.all(in: logs)
        guard closes.count == 1, let close = closes.first, close.deadline == deadline, let seen = result.closedAfter else { return false }
        let armed = Duration.milliseconds(Int64(close.armedSeconds * 1_000))
        return armed >= earliest && armed <= latest + result.timersLate && seen >= earliest
    }

    /// An exchange and the watcher's account, for a failed expectation.
    static func describe(_ result: RawHTTP.Exchange, _ logs: InMemoryLogHandler) -> String {
        "client saw the close after \(result.closedAfter as Any), timers \(result.timersLate) late; watcher: \(WatcherClose.all(in: logs))"
    }

    /// Runs a server answering `GET /x` whose only deadlines are the watcher's, for `body`, with the server's log (at
    /// debug) kept.
    static func withServer(_ body: (Int, InMemoryLogHandler) async throws -> Void) async throws {
        let logs = {
            var handler = InMemoryLogHandler()
            handler.logLevel = .debug
            return handler
        }()
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
            logger: Logger(label: "watcher-test") { _ in logs }
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            defer { group.cancelAll() }
            let started = await eventually(timeout: 30) { port.withLock { $0 } != nil }
            guard started, let bound = port.withLock({ $0 }) else { throw ServerDidNotStart() }
            try await body(bound, logs)
        }
    }

    struct ServerDidNotStart: Error {}

    @Test("a kept-alive connection with nothing in progress is closed after the idle timeout, not before, by the watcher alone")
    func idle() async throws {
        try await Self.withServer { port, logs in
            let result = try await RawHTTP.exchange(
                port: port,
                answered: [Self.request, Self.request],
                thenSending: [],
                expectingCloseAfter: .seconds(2),
                closeWithin: .seconds(20)
            )
            let closed = Self.closedByWatcher(result, logs, deadline: "idle", between: .milliseconds(1_900), and: .milliseconds(3_000))
            #expect(closed, "\(Self.describe(result, logs))")
            #expect(String(decoding: result.received, as: UTF8.self).components(separatedBy: "HTTP/1.1 200").count == 3)
        }
    }

    @Test("a request begun on an idle connection is held to the head timeout from its first byte, not to the idle timeout")
    func headAfterIdle() async throws {
        try await Self.withServer { port, logs in
            let result = try await RawHTTP.exchange(
                port: port,
                answered: [Self.request],
                thenSending: Array("GET /x HT".utf8),
                expectingCloseAfter: .seconds(1),
                closeWithin: .seconds(20)
            )
            let closed = Self.closedByWatcher(result, logs, deadline: "head", between: .milliseconds(900), and: .milliseconds(1_900))
            #expect(closed, "\(Self.describe(result, logs))")
        }
    }

    /// The test support's own diagnosis: a wait that gives up before the server closes says what the kernel said of the
    /// connection (a server's close that reached this end but not its event loop would read `CLOSE_WAIT`), found among
    /// many: `/proc/net/tcp` is read whole, not its first page, as `String(contentsOfFile:)` would.
    @Test("a raw exchange that gives up before the close says the connection was still established and held")
    func giveUpState() async throws {
        try await Self.withServer { port, _ in
            var others: [any Channel] = []
            for _ in 0..<60 {
                others.append(try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get())
            }
            defer { for other in others { other.close(promise: nil) } }
            let result = try await RawHTTP.exchange(port: port, answered: [Self.request], thenSending: [], closeWithin: .milliseconds(300))
            #expect(result.closedAfter == nil)
            #expect(result.stateAtGiveUp?.hasPrefix("ESTABLISHED, queues ") == true, "\(result.stateAtGiveUp as Any)")
            #expect(result.stateAtGiveUp?.hasSuffix(", held by this process") == true, "\(result.stateAtGiveUp as Any)")
        }
    }
}
