import Foundation
import Hummingbird
import NIOCore
import OrchardServer
import Synchronization

/// An app backend that receives Orchard's webhooks over a real socket, records each attempt, and can be taken down.
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

    private let state = Mutex<(attempts: [Attempt], down: Bool)>(([], false))
    private let server: Mutex<RunningService?> = Mutex(nil)

    private init() {}

    /// Starts a receiver on a free loopback port.
    public static func start() async throws -> WebhookReceiver {
        let receiver = WebhookReceiver()
        let router = Router()
        router.post("hooks") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName.lowercased()] = field.value }
            let status = receiver.state.withLock { state -> Int in
                let status = state.down ? 503 : 204
                state.attempts.append(Attempt(headers: headers, body: String(buffer: body), answeredStatus: status))
                return status
            }
            return Response(status: .init(code: status))
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
    public func setDown(_ down: Bool) { state.withLock { $0.down = down } }

    /// Stops the receiver.
    public func stop() async {
        await server.withLock { $0 }?.stop()
    }
}
