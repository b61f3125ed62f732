public import AppleID
import AsyncHTTPClient
public import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A scripted stand-in for Apple's `/auth/keys`, `/auth/token` and `/auth/revoke`, for testing ``AppleRESTClient`` and
/// ``HTTPAppleKeySource`` over a real socket: each path answers the queued answers in turn, then its default, and every
/// request is recorded.
public final class AppleIDStubServer: Sendable {
    /// One scripted answer.
    public struct Answer: Sendable {
        /// The HTTP status.
        public var status: Int
        /// The body.
        public var body: String
        /// How long to wait before answering.
        public var delay: Duration

        /// Creates an answer.
        public init(status: Int = 200, body: String = "", delay: Duration = .zero) {
            self.status = status
            self.body = body
            self.delay = delay
        }
    }

    /// One request the stub received.
    public struct Received: Sendable {
        /// The method, e.g. `POST`.
        public let method: String
        /// The path, e.g. `/auth/token`.
        public let path: String
        /// The `Content-Type` header.
        public let contentType: String?
        /// The form fields of a form-urlencoded body.
        public let form: [String: String]
    }

    private struct State {
        var queued: [String: [Answer]] = [:]
        var defaults: [String: Answer] = [:]
        var received: [Received] = []
    }

    private let state = Mutex(State())
    /// Where the stub listens, e.g. `http://127.0.0.1:54321`.
    public let baseURL: URL
    private let task: Task<Void, any Error>

    private init(baseURL: URL, task: Task<Void, any Error>) {
        self.baseURL = baseURL
        self.task = task
    }

    /// Starts a stub on a free loopback port, runs `body`, and stops it.
    public static func with<T: Sendable>(_ body: (AppleIDStubServer) async throws -> T) async throws -> T {
        let stub = try await start()
        do {
            let result = try await body(stub)
            await stub.stop()
            return result
        } catch {
            await stub.stop()
            throw error
        }
    }

    /// Starts a stub on a free loopback port.
    public static func start() async throws -> AppleIDStubServer {
        let box = StateBox()
        let router = Router()
        for path in ["/auth/keys", "/auth/token", "/auth/revoke"] {
            let handler: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
                try await box.answer(request)
            }
            router.get(RouterPath(stringLiteral: path), use: handler)
            router.post(RouterPath(stringLiteral: path), use: handler)
        }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: Logger(label: "AppleIDStubServer", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let task = Task {
            defer { continuation.finish() }
            try await application.runService(gracefulShutdownSignals: [])
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), let url = URL(string: "http://127.0.0.1:\(port)") else {
            task.cancel()
            try await task.value
            throw CancellationError()
        }
        let stub = AppleIDStubServer(baseURL: url, task: task)
        box.server.withLock { $0 = stub }
        return stub
    }

    /// Stops the server and waits until it has.
    public func stop() async {
        task.cancel()
        _ = await task.result
    }

    /// Queues answers for `path` (e.g. `/auth/token`), answered in order before the default.
    public func enqueue(_ answers: Answer..., for path: String) {
        state.withLock { $0.queued[path, default: []].append(contentsOf: answers) }
    }

    /// Sets the answer for `path` once its queue is empty (initially 200 with an empty body).
    public func setDefault(_ answer: Answer, for path: String) {
        state.withLock { $0.defaults[path] = answer }
    }

    /// Every request received so far.
    public var received: [Received] { state.withLock { $0.received } }

    /// A REST client talking to this stub.
    public func restClient(secrets: ClientSecretSigner, timeout: Duration = .seconds(5)) -> AppleRESTClient {
        AppleRESTClient(Self.endpoints(baseURL), secrets: secrets, timeout: timeout)
    }

    /// A key source fetching from this stub.
    public func keySource(timeout: Duration = .seconds(5)) -> HTTPAppleKeySource {
        HTTPAppleKeySource(Self.endpoints(baseURL), timeout: timeout)
    }

    /// A REST client for a port nothing listens on (connection refused).
    public static func unreachableRESTClient(secrets: ClientSecretSigner) -> AppleRESTClient {
        // Force-unwrap: a constant, valid URL.
        AppleRESTClient(endpoints(URL(string: "http://127.0.0.1:1")!), secrets: secrets, timeout: .seconds(1))
    }

    /// Apple at `baseURL`, over the shared HTTP client, logging nowhere.
    private static func endpoints(_ baseURL: URL) -> AppleEndpoints {
        AppleEndpoints(baseURL: baseURL, httpClient: .shared, logger: Logger(label: "AppleIDStubServer", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    fileprivate func answer(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: 1 << 20)
        let path = request.uri.path
        let received = Received(
            method: request.method.rawValue,
            path: path,
            contentType: request.headers[.contentType],
            form: Self.parseForm(String(buffer: body))
        )
        let answer = state.withLock { state in
            state.received.append(received)
            if var queue = state.queued[path], !queue.isEmpty {
                let next = queue.removeFirst()
                state.queued[path] = queue
                return next
            }
            return state.defaults[path] ?? Answer()
        }
        if answer.delay > .zero { try await Task.sleep(for: answer.delay) }
        return Response(
            status: HTTPResponse.Status(code: answer.status),
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: answer.body))
        )
    }

    private static func parseForm(_ text: String) -> [String: String] {
        var components = URLComponents()
        components.percentEncodedQuery = text.replacingOccurrences(of: "+", with: "%20")
        var form: [String: String] = [:]
        for item in components.queryItems ?? [] { form[item.name] = item.value ?? "" }
        return form
    }
}

/// Lets the router reach the stub, which exists only once the server listens.
private final class StateBox: Sendable {
    let server = Mutex<AppleIDStubServer?>(nil)

    func answer(_ request: Request) async throws -> Response {
        guard let server = server.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
        return try await server.answer(request)
    }
}
