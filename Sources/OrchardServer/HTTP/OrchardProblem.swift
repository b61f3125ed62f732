public import Accounts
import Foundation
public import HTTPTypes
public import Hummingbird
import NIOCore
import Synchronization

/// An RFC 9457 problem-details answer with the contract's stable `code`.
public struct OrchardProblem: Error, HTTPResponseError, Sendable {
    /// The largest request body Orchard reads.
    public static let maxBodySize = 64 * 1024

    /// The stable machine code.
    public var code: ProblemCode
    /// The HTTP status: the code's.
    public var status: HTTPResponse.Status { code.status }
    /// A short, fixed summary of the code.
    public var title: String { code.title }
    /// What went wrong this time (never a token, an email or a subject).
    public var detail: String
    /// Extra members (e.g. `reason` for `session_revoked`).
    public var extra: [String: String]
    /// Extra headers (e.g. `Allow`, `Clear-Site-Data`).
    public var headers: HTTPFields
    /// What went wrong, for the log only (``ProblemLog``), never sent: the reason behind an internal error or a storage
    /// outage, which names internals (an engine, a driver's error) the client has no use for.
    public var logReason: String?

    /// Creates a problem.
    public init(_ code: ProblemCode, detail: String, extra: [String: String] = [:], headers: HTTPFields = [:]) {
        self.code = code
        self.detail = detail
        self.extra = extra
        self.headers = headers
    }

    /// `400 invalid_request`.
    public static func invalidRequest(_ detail: String) -> OrchardProblem {
        OrchardProblem(.invalidRequest, detail: detail)
    }

    /// `413 payload_too_large`.
    public static let payloadTooLarge = OrchardProblem(.payloadTooLarge, detail: "request bodies are limited to 64 KiB")

    /// `404 not_found`.
    public static let notFound = OrchardProblem(.lifecycle(.notFound), detail: "no such endpoint")

    /// `405 method_not_allowed`, listing the allowed methods.
    public static func methodNotAllowed(allowed: [HTTPRequest.Method]) -> OrchardProblem {
        var headers = HTTPFields()
        headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
        return OrchardProblem(
            .methodNotAllowed,
            detail: "this endpoint accepts \(allowed.map(\.rawValue).joined(separator: ", "))",
            headers: headers
        )
    }

    /// The detail of every `503 storage_unavailable`: which engine failed, and how, is for the log.
    public static let storageUnavailableDetail = "the database cannot be used right now; try again shortly"

    /// `500 internal_error`, for a bug: the detail says nothing of it.
    public static let internalError = OrchardProblem(.internalError, detail: "an unexpected error occurred; it has been logged")

    /// The problem for a lifecycle failure.
    public init(_ error: AccountsError) {
        let code = ProblemCode(error.code)
        var extra: [String: String] = [:]
        if let reason = error.sessionEndReason { extra["reason"] = reason.rawValue }
        // An internal error's reason, and a storage outage's, are for the log only.
        if code == .internalError {
            self.init(code, detail: OrchardProblem.internalError.detail, extra: extra)
            logReason = error.reason
        } else if code == .lifecycle(.storageUnavailable) {
            self.init(code, detail: OrchardProblem.storageUnavailableDetail, extra: extra)
            logReason = error.reason
        } else {
            self.init(code, detail: error.reason, extra: extra)
        }
    }

    /// The body: RFC 9457's members, Orchard's `code`, and the problem's extra members (strings). One keyed container
    /// rather than a dictionary of values: JSONEncoder wraps each dictionary value generically (`Benchmarks/run`'s
    /// `POST /v1/auth/apple, nonce 401` guards this).
    private struct Body: Encodable {
        let problem: OrchardProblem

        struct Key: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(_ name: String) { stringValue = name }
            init?(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            for (name, value) in problem.extra where !Self.fixed.contains(name) {
                try container.encode(value, forKey: Key(name))
            }
            try container.encode("urn:orchard:error:\(problem.code.rawValue)", forKey: Key("type"))
            try container.encode(problem.title, forKey: Key("title"))
            try container.encode(problem.detail, forKey: Key("detail"))
            try container.encode(problem.code.rawValue, forKey: Key("code"))
            try container.encode(Int(problem.status.code), forKey: Key("status"))
        }

        /// The members the problem itself sets, which an extra member of the same name does not replace.
        static let fixed: Set<String> = ["type", "title", "detail", "code", "status"]
    }

    /// Encodes problem bodies (keys sorted). `JSONEncoder`, not Foundation's `JSONSerialization`, which bridges every
    /// key through `NSString` to sort it (`Benchmarks/run`'s `POST /v1/auth/apple, nonce 401` guards this).
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// The `application/problem+json` response.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var fields = Self.bodyHeaders
        if !headers.isEmpty {
            fields = headers
            for field in Self.bodyHeaders { fields[field.name] = field.value }
        }
        let body = try EncodedProblemBodies.shared.body(of: self)
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: body))
    }

    /// The headers of every problem answer.
    private static let bodyHeaders: HTTPFields = [.contentType: "application/problem+json", .cacheControl: "no-store"]

    /// The body, encoded.
    fileprivate func encodedBody() throws -> ByteBuffer {
        ByteBuffer(bytes: try Self.encoder.encode(Body(problem: self)))
    }
}

/// Problem bodies already encoded, by everything a body holds.
///
/// A refused request's answer is one of a few dozen (a code, its title and a detail from a fixed set, mostly), so it
/// is encoded once, not anew per answer (`Benchmarks/run`'s `POST /v1/auth/apple, nonce 401` guards this). Bounded: a
/// detail can quote a request's value (an `alg`, an `aud`), so when the memo is full it starts over rather than grow.
package final class EncodedProblemBodies: Sendable {
    /// The memo every answer uses.
    static let shared = EncodedProblemBodies(capacity: 256)

    private struct Key: Hashable {
        let code: ProblemCode
        let detail: String
        let extra: [String: String]
    }

    private let capacity: Int
    private let bodies = Mutex<[Key: ByteBuffer]>([:])

    /// A memo that keeps at most `capacity` bodies.
    package init(capacity: Int) {
        self.capacity = capacity
    }

    /// How many bodies are kept now.
    package var count: Int { bodies.withLock { $0.count } }

    /// The problem's body, encoded once per distinct content.
    package func body(of problem: OrchardProblem) throws -> ByteBuffer {
        let key = Key(code: problem.code, detail: problem.detail, extra: problem.extra)
        if let known = bodies.withLock({ $0[key] }) { return known }
        let body = try problem.encodedBody()
        bodies.withLock { bodies in
            if bodies.count >= capacity { bodies.removeAll(keepingCapacity: true) }
            bodies[key] = body
        }
        return body
    }
}
