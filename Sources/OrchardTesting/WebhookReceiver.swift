import Foundation
import Hummingbird
import NIOCore
import OrchardServer
import Synchronization

/// An app backend that receives Orchard's webhooks over a real socket, records each attempt, and can be taken down,
/// made to stall or to redirect (``Behaviour``).
public final class WebhookReceiver: Sendable {
    /// One attempt as received.
    public struct Attempt: Sendable {
        /// The headers, lowercased names.
        public let headers: [String: String]
        /// The raw body.
        public let body: String
        /// The status it was answered with.
        public let answeredStatus: Int
        /// The decoded JSON body.
        public var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
    }

    /// How the receiver answers.
    public enum Behaviour: Sendable {
        /// `204`.
        case accept
        /// `503`.
        case down
        /// `307` to itself: a client that followed it would post the same webhook again.
        case redirect
        /// The status line `200` and a first piece of body, then nothing (until the receiver stops).
        case stallAfterHeaders
        /// Reads the request and sends nothing at all (until the receiver stops).
        case stallBeforeHeaders
    }

    private struct State {
        var attempts: [Attempt] = []
        var behaviour = Behaviour.accept
        var released = false
    }

    private let state = Mutex(State())
    private let server: Mutex<RunningService?> = Mutex(nil)

    private init() {}

    /// A webhook secret in the `whsec_` form Orchard's configuration takes: the prefix, then the standard base64 of
    /// `seed`'s UTF-8 bytes. A distinct seed per test keeps one test's signatures from verifying under another's.
    public static func secret(seed: String) -> String {
        "whsec_" + Data(seed.utf8).base64EncodedString()
    }

    /// Starts a receiver on a free loopback port.
    public static func start() async throws -> WebhookReceiver {
        let receiver = WebhookReceiver()
        let router = Router()
        router.post("hooks") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName.lowercased()] = field.value }
            let behaviour = receiver.state.withLock { state -> Behaviour in
                let status =
                    switch state.behaviour {
                    case .accept: 204
                    case .down: 503
                    case .redirect: 307
                    case .stallAfterHeaders: 200
                    case .stallBeforeHeaders: 0
                    }
                state.attempts.append(Attempt(headers: headers, body: String(buffer: body), answeredStatus: status))
                return state.behaviour
            }
            switch behaviour {
            case .accept: return Response(status: .noContent)
            case .down: return Response(status: .serviceUnavailable)
            case .redirect: return Response(status: .temporaryRedirect, headers: [.location: "/hooks"])
            case .stallBeforeHeaders:
                await receiver.waitUntilStopping()
                return Response(status: .serviceUnavailable)
            case .stallAfterHeaders:
                return Response(
                    status: .ok,
                    headers: [.contentType: "text/plain"],
                    body: ResponseBody { writer in
                        try await writer.write(ByteBuffer(string: "received; now stalling"))
                        await receiver.waitUntilStopping()
                        try await writer.finish(nil)
                    }
                )
            }
        }
        let running = try await RunningService.start { onServerRunning in
            Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), onServerRunning: onServerRunning)
        }
        receiver.server.withLock { $0 = running }
        return receiver
    }

    /// The URL to configure in `ORCHARD_WEBHOOK_URLS`.
    public var url: String { "\(server.withLock { $0 }!.baseURL)/hooks" }

    /// Every attempt so far.
    public var attempts: [Attempt] { state.withLock { $0.attempts } }

    /// Attempts answered 2xx.
    public var delivered: [Attempt] { attempts.filter { (200..<300).contains($0.answeredStatus) } }

    /// Answers 503 while down.
    public func setDown(_ down: Bool) { setBehaviour(down ? .down : .accept) }

    /// How to answer from now on.
    public func setBehaviour(_ behaviour: Behaviour) {
        state.withLock {
            $0.behaviour = behaviour
            $0.released = false
        }
    }

    /// Ends every stalled answer (a stalled status line then finishes its body; a stall before the headers answers
    /// 503) and accepts from now on.
    public func releaseStalls() {
        state.withLock {
            $0.behaviour = .accept
            $0.released = true
        }
    }

    /// Returns once the stalls are released or the receiver stops, or after a minute (a stalled answer must not
    /// outlive its test).
    private func waitUntilStopping() async {
        for _ in 0..<600 where !state.withLock({ $0.released }) {
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Stops the receiver.
    public func stop() async {
        state.withLock { $0.released = true }
        await server.withLock { $0 }?.stop()
    }
}
