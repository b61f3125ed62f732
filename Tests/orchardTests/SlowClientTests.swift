import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import OrchardTesting
import Testing

/// A client cannot hold connections open without sending: a request head (and, with built-in TLS, the handshake before
/// the first) must be complete within 10 s, and a kept-alive connection with nothing in progress goes after 60 s. Real
/// time is the subject here, so these tests wait for it.
///
/// The server is `orchard serve` in a process of its own, on the selected backend, as a user runs it: in the test
/// process, beside the other tests of a parallel pass, the server once took connections up ten seconds after the
/// kernel had completed them while every event loop of the process ran its timers on time, and a test of the server's
/// deadlines then measured the test process instead.
@Suite("Slow and idle clients")
struct SlowClientTests {
    static let head = "GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    static let request = Array((head + "\r\n").utf8)

    /// Whether the connection was closed by the head deadline: after about 10 s, not before (and no later than 11 s
    /// plus however late this process's event loops, which time the close, ran a timer due at 10 s).
    static func closedByHeadDeadline(_ exchange: RawHTTP.Exchange) -> Bool {
        exchange.closed(between: .seconds(9), and: .seconds(11))
    }

    /// An exchange's close, its event loops' lateness and what the server sent (an answer before the body was whole
    /// would leave the connection to the idle deadline), for a failed expectation.
    static func describe(_ exchange: RawHTTP.Exchange) -> String {
        let received = String(decoding: exchange.received.prefix(300), as: UTF8.self)
        let state = exchange.stateAtGiveUp.map { ", at the give-up the connection was \($0)" } ?? ""
        let closed = "closed after \(String(describing: exchange.closedAfter)), timers \(exchange.timersLate) late"
        return "\(closed), received \(received.debugDescription)\(state)"
    }

    /// `orchard serve` on the selected backend, logging at debug (each close says which deadline passed, and how long
    /// after it took the connection up), for `body`; `extra` goes over the installation's environment.
    static func withServe(
        _ extra: [String: String] = [:],
        http: HTTPClient? = nil,
        _ body: (ServeProcess, InstallationOnBackend) async throws -> Void
    ) async throws {
        try await InstallationOnBackend.withServe(extra.merging(["ORCHARD_LOG_LEVEL": "debug"]) { $1 }, http: http, body)
    }

    /// For a close not within its bound: serve's own account of its deadlines (how long after it took each connection
    /// up, and after it armed the timer, it closed it), so that the failure says whether the connection was taken up
    /// late, its timer ran late, or no deadline closed it.
    static func recordServersAccount(_ serve: ServeProcess) {
        let lines = serve.logText.split(separator: "\n").filter {
            $0.contains("deadline passed") || $0.contains("before its body had arrived")
        }
        if lines.isEmpty { Issue.record("serve logged no deadline") }
        for line in lines.prefix(12) { Issue.record("serve: \(line)") }
    }

    @Test(
        "a connection that sends nothing, half a request head, or half a body (at once or a byte every 2 s) is closed within 10 s; normal traffic is unaffected"
    )
    func slowHeads() async throws {
        try await Self.withServe { serve, installation in
            let port = serve.port
            async let silent = RawHTTP.exchange(port: port, sending: [], expectingCloseAfter: .seconds(10), closeWithin: .seconds(20))
            async let half = RawHTTP.exchange(
                port: port,
                sending: Array(Self.head.utf8),
                expectingCloseAfter: .seconds(10),
                closeWithin: .seconds(20)
            )
            async let later = RawHTTP.exchange(
                port: port,
                answered: [Self.request, Self.request],
                thenSending: Array("GET /health/li".utf8),
                expectingCloseAfter: .seconds(10),
                closeWithin: .seconds(20)
            )
            // A body sent slowly: its head, then ten of its hundred bytes, then nothing.
            let slowBody =
                "POST /v1/apple/notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: 100\r\n\r\n{\"payload\""
            async let body = RawHTTP.exchange(port: port, sending: Array(slowBody.utf8), expectingCloseAfter: .seconds(10), closeWithin: .seconds(20))
            // A head dripped a byte every 2 s: the deadline counts from its first byte, not from the latest.
            async let dripped = RawHTTP.drip(
                port: port,
                bytes: Array(Self.head.utf8),
                every: .seconds(2),
                expectingCloseAfter: .seconds(10),
                closeWithin: .seconds(30)
            )
            // A body dripped a byte every 2 s after its head: its deadline counts from the head, not from the latest byte.
            async let drippedBody = RawHTTP.drip(
                port: port,
                after: Array(
                    ("POST /v1/apple/notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        + "Content-Length: 100\r\n\r\n").utf8
                ),
                bytes: Array(String(repeating: "x", count: 100).utf8),
                every: .seconds(2),
                expectingCloseAfter: .seconds(10),
                closeWithin: .seconds(30)
            )
            // Pipelined: a whole request and half the next one in one write, before the first answer was read.
            async let pipelined = RawHTTP.exchange(
                port: port,
                sending: Self.request + Array("GET /health/li".utf8),
                expectingCloseAfter: .seconds(10),
                closeWithin: .seconds(20)
            )
            // Meanwhile, whole requests are answered at once.
            let client = installation.base.client(serve)
            for _ in 0..<5 { #expect(try await client.request(.GET, "/health/live").status == 200) }
            let (silentResult, halfResult, laterResult) = try await (silent, half, later)
            let bodyResult = try await body
            #expect(Self.closedByHeadDeadline(bodyResult), "half a body: \(Self.describe(bodyResult))")
            #expect(Self.closedByHeadDeadline(silentResult), "silent: \(Self.describe(silentResult))")
            #expect(silentResult.received.isEmpty)
            #expect(Self.closedByHeadDeadline(halfResult), "half a head: \(Self.describe(halfResult))")
            #expect(Self.closedByHeadDeadline(laterResult), "a later head: \(Self.describe(laterResult))")
            #expect(String(decoding: laterResult.received, as: UTF8.self).components(separatedBy: "HTTP/1.1 200").count == 3)
            let drippedResult = try await dripped
            #expect(Self.closedByHeadDeadline(drippedResult), "a head a byte every 2 s: \(Self.describe(drippedResult))")
            #expect(drippedResult.received.isEmpty || !String(decoding: drippedResult.received, as: UTF8.self).contains("200"))
            let drippedBodyResult = try await drippedBody
            #expect(Self.closedByHeadDeadline(drippedBodyResult), "a body a byte every 2 s: \(Self.describe(drippedBodyResult))")
            #expect(drippedBodyResult.received.isEmpty || !String(decoding: drippedBodyResult.received, as: UTF8.self).contains("HTTP/1.1 2"))
            let pipelinedResult = try await pipelined
            #expect(Self.closedByHeadDeadline(pipelinedResult), "pipelined half a head: \(Self.describe(pipelinedResult))")
            #expect(
                String(decoding: pipelinedResult.received, as: UTF8.self).components(separatedBy: "HTTP/1.1 200").count == 2,
                "the first was answered"
            )
            let results = [bodyResult, silentResult, halfResult, laterResult, drippedResult, drippedBodyResult, pipelinedResult]
            if !results.allSatisfy(Self.closedByHeadDeadline) { Self.recordServersAccount(serve) }
        }
    }

    @Test("a kept-alive connection with no request in progress is closed after 60 s, not before")
    func idleKeepAlive() async throws {
        try await Self.withServe { serve, _ in
            let result = try await RawHTTP.exchange(
                port: serve.port,
                answered: [Self.request],
                thenSending: [],
                expectingCloseAfter: .seconds(60),
                closeWithin: .seconds(80)
            )
            #expect(result.closed(between: .seconds(58), and: .seconds(65)), "\(Self.describe(result))")
            if !result.closed(between: .seconds(58), and: .seconds(65)) { Self.recordServersAccount(serve) }
        }
    }

    @Test("with built-in TLS, half a handshake is closed within 10 s, and HTTPS still works")
    func slowHandshake() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let authority = try TestCertificateAuthority(in: directory)
        let issued = try authority.issue("serve", hosts: ["localhost", "127.0.0.1"])
        try await InstallationOnBackend.withServe(["ORCHARD_LOG_LEVEL": "debug"], tls: issued, from: authority) { serve, https in
            // A TLS record header announcing a ClientHello, and then nothing.
            let halfHello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]
            async let stalled = RawHTTP.exchange(port: serve.port, sending: halfHello, expectingCloseAfter: .seconds(10), closeWithin: .seconds(20))
            let answer = try await https.execute(HTTPClientRequest(url: serve.baseURL + "/health/live"), timeout: .seconds(10))
            #expect(answer.status.code == 200)
            let result = try await stalled
            #expect(Self.closedByHeadDeadline(result), "half a handshake: \(Self.describe(result))")
            if !Self.closedByHeadDeadline(result) { Self.recordServersAccount(serve) }
        }
    }
}
