import Foundation
import HTTPTypes
import Hummingbird

extension Request {
    /// A page's query: `before` (the cursor the previous page answered) and `limit` (`defaultLimit` when absent). A limit
    /// that is no number reads as 0, so that the lifecycle refuses it as out of range, with the range in its detail.
    func pageQuery(defaultLimit: Int) -> (before: String?, limit: Int) {
        let query = uri.queryParameters
        return (query["before"].map(String.init), query["limit"].map { Int(String($0)) ?? 0 } ?? defaultLimit)
    }

    /// One decoder for every request body (it keeps no state between calls).
    private static let bodyDecoder = JSONDecoder()

    /// Reads at most 64 KiB of JSON body and decodes it; any failure is `400 invalid_request` (or `413`).
    func decodeJSON<T: Decodable>(as type: T.Type, context: some RequestContext) async throws -> T {
        let buffer = try await collectedBody()
        guard buffer.readableBytes > 0 else { throw OrchardProblem.invalidRequest("the body must be a JSON object") }
        do {
            return try Self.bodyDecoder.decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw OrchardProblem.invalidRequest(Self.describe(error))
        } catch {
            throw OrchardProblem.invalidRequest("the body is not valid JSON")
        }
    }

    /// The body, at most ``OrchardProblem/maxBodySize`` bytes of it, else `413 payload_too_large`.
    ///
    /// Read here rather than by NIO's `collect(upTo:)`: the handler runs on the event loop as its serial executor, so
    /// entering and leaving each of `collect`'s two async frames would go through the loop's queue (`Benchmarks/run`'s
    /// `POST /v1/auth/apple, nonce 401` guards this).
    func collectedBody() async throws -> ByteBuffer {
        var collected = ByteBuffer()
        for try await part in body {
            guard part.readableBytes <= OrchardProblem.maxBodySize - collected.readableBytes else {
                throw OrchardProblem.payloadTooLarge
            }
            if collected.readableBytes == 0 {
                collected = part
            } else {
                collected.writeImmutableBuffer(part)
            }
        }
        return collected
    }

    /// The session token: `Authorization: Bearer TOKEN`, else the `__Host-orchard_session` cookie.
    ///
    /// On every authenticated request, twice: the scheme is compared and the token cut out on the UTF-8 bytes, not with
    /// Foundation's `trimmingCharacters`, which bridges through `NSString` (`Benchmarks/run`'s `GET /v1/session` guards
    /// this).
    var sessionToken: (token: String, viaCookie: Bool)? {
        if let authorization, let token = Self.bearerToken(authorization) {
            return (token, false)
        }
        if let cookie = cookies[SessionCookie.name]?.value, !cookie.isEmpty {
            return (cookie, true)
        }
        return nil
    }

    /// The `Authorization` field, as `headers[.authorization]` reads it (repeated fields joined by `, `), without its
    /// generic lazy join for the common single field: that join resolved type metadata on every session check
    /// (`Benchmarks/run`'s `GET /v1/session` guards this).
    private var authorization: String? {
        var found: String?
        for field in headers where field.name == .authorization {
            guard found == nil else { return headers[.authorization] }
            found = field.value
        }
        return found
    }

    /// The token of `Bearer TOKEN` (scheme case-insensitive, spaces and tabs around the token ignored), else `nil`.
    ///
    /// On the field's contiguous UTF-8, with the token copied out once (`Benchmarks/run`'s `GET /v1/session` guards
    /// this: the cookie rule and the handler each read it).
    static func bearerToken(_ field: String) -> String? {
        var field = field
        return field.withUTF8 { bytes -> String? in
            let scheme = "bearer".utf8
            guard bytes.count > scheme.count, bytes[scheme.count] == UInt8(ascii: " "),
                zip(bytes, scheme).allSatisfy({ $0 | 0x20 == $1 })
            else { return nil }
            func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
            var start = scheme.count + 1
            var end = bytes.count
            while start < end, isSpace(bytes[start]) { start += 1 }
            while end > start, isSpace(bytes[end - 1]) { end -= 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }

    /// Says which field is wrong without echoing any value.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map(\.stringValue).joined(separator: ".")
        }
        func field(_ context: DecodingError.Context) -> String {
            context.codingPath.isEmpty ? "the body" : "field '\(path(context))'"
        }
        switch error {
        case .keyNotFound(let key, let context):
            let prefix = path(context)
            return "missing field '\(prefix.isEmpty ? key.stringValue : prefix + "." + key.stringValue)'"
        case .typeMismatch(let type, let context):
            return "\(field(context)) must be \(Self.typeName(type))"
        case .valueNotFound(let type, let context):
            return "\(field(context)) must be \(Self.typeName(type)), not null"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "the body is not valid JSON" : "field '\(path(context))' is invalid"
        @unknown default:
            return "the body could not be decoded"
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Double.Type: "a number"
        default: "an object"
        }
    }
}
