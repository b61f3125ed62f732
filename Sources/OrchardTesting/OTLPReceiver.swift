import AppleID
import Foundation
import Hummingbird
import NIOCore
import OrchardServer
import Synchronization

/// An OpenTelemetry collector's OTLP/HTTP traces endpoint (`POST /v1/traces`, JSON encoding) on a real socket, which
/// records every span it is sent: for tests of `serve`'s tracing.
public final class OTLPReceiver: Sendable {
    /// One exported span.
    public struct ExportedSpan: Sendable, CustomStringConvertible {
        /// The trace id, 32 lowercase hex digits.
        public let traceID: String
        /// The span id, 16 lowercase hex digits.
        public let spanID: String
        /// The parent's span id, or `nil` for a root span.
        public let parentSpanID: String?
        /// The operation name.
        public let name: String
        /// OTLP's span kind: 1 internal, 2 server, 3 client.
        public let kind: Int
        /// The attributes, each value as text.
        public let attributes: [String: String]

        public var description: String { "\(name) [\(kind)] \(spanID) ← \(parentSpanID ?? "-") \(attributes)" }
    }

    private let bodies = Mutex<[String]>([])
    private let server = Mutex<RunningService?>(nil)

    private init() {}

    /// Starts a receiver on a free loopback port.
    public static func start() async throws -> OTLPReceiver {
        let receiver = OTLPReceiver()
        let router = Router()
        router.post("v1/traces") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 16 << 20)
            receiver.bodies.withLock { $0.append(String(buffer: body)) }
            return Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "{}"))
            )
        }
        let running = try await RunningService.start { onServerRunning in
            Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), onServerRunning: onServerRunning)
        }
        receiver.server.withLock { $0 = running }
        return receiver
    }

    /// The base URL to set as `OTEL_EXPORTER_OTLP_ENDPOINT` (the exporter appends `/v1/traces`).
    public var endpoint: String { server.withLock { $0 }!.baseURL }

    /// Every request body received, as sent.
    public var rawBodies: [String] { bodies.withLock { $0 } }

    /// Every span received so far, in the order they arrived.
    public var spans: [ExportedSpan] {
        rawBodies.flatMap(Self.spans(inJSON:))
    }

    /// The spans of one OTLP `ExportTraceServiceRequest` in its JSON encoding.
    static func spans(inJSON text: String) -> [ExportedSpan] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return [] }
        var found: [ExportedSpan] = []
        for resource in object["resourceSpans"] as? [[String: Any]] ?? [] {
            for scope in resource["scopeSpans"] as? [[String: Any]] ?? [] {
                for span in scope["spans"] as? [[String: Any]] ?? [] {
                    var attributes: [String: String] = [:]
                    for attribute in span["attributes"] as? [[String: Any]] ?? [] {
                        guard let key = attribute["key"] as? String, let value = attribute["value"] as? [String: Any] else { continue }
                        attributes[key] = value.values.first.map { "\($0)" }
                    }
                    let parent = (span["parentSpanId"] as? String).flatMap { $0.isEmpty ? nil : hex($0) }
                    found.append(
                        ExportedSpan(
                            traceID: hex(span["traceId"] as? String ?? ""),
                            spanID: hex(span["spanId"] as? String ?? ""),
                            parentSpanID: parent,
                            name: span["name"] as? String ?? "",
                            kind: (span["kind"] as? Int) ?? 0,
                            attributes: attributes
                        )
                    )
                }
            }
        }
        return found
    }

    /// An id as lowercase hex: OTLP's JSON spells ids in hex, protobuf's canonical JSON mapping in base64; both are read.
    static func hex(_ text: String) -> String {
        let hexDigits = CharacterSet(charactersIn: "0123456789abcdefABCDEF")
        if text.count == 32 || text.count == 16, text.unicodeScalars.allSatisfy(hexDigits.contains) { return text.lowercased() }
        guard let bytes = Data(base64Encoded: text) else { return text }
        return bytes.hexString
    }

    /// Stops the receiver.
    public func stop() async {
        await server.withLock { $0 }?.stop()
    }
}
