public import Foundation
public import Hummingbird
public import NIOCore

/// The request context of Orchard's routes: bodies are capped at 64 KiB and dates are RFC 3339 in UTC.
public struct OrchardRequestContext: RequestContext, RemoteAddressRequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The socket's peer (a proxy's address behind one; see ``ClientAddressResolver``).
    public let remoteAddress: SocketAddress?
    /// On the operator listener, the operator the request authenticated as (``OperatorMiddleware``).
    public var operatorName: String?

    /// Creates the context for a request.
    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// Bodies over 64 KiB are refused (`413 payload_too_large`).
    public var maxUploadSize: Int { OrchardProblem.maxBodySize }

    /// JSON with RFC 3339 dates: one encoder for every answer, not one per answer (it is thread-safe;
    /// `Benchmarks/run`'s `GET /v1/session` guards this).
    public var responseEncoder: JSONEncoder { Self.sharedEncoder }

    private static let sharedEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
