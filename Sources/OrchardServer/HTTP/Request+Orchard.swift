import Foundation
import HTTPTypes
import Hummingbird

extension Request {
    /// Reads at most 64 KiB of JSON body and decodes it; any failure is `400 invalid_request` (or `413`).
    func decodeJSON<T: Decodable>(as type: T.Type, context: some RequestContext) async throws -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: OrchardProblem.maxBodySize)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw OrchardProblem.payloadTooLarge
        }
        guard buffer.readableBytes > 0 else { throw OrchardProblem.invalidRequest("the body must be a JSON object") }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw OrchardProblem.invalidRequest(Self.describe(error))
        } catch {
            throw OrchardProblem.invalidRequest("the body is not valid JSON")
        }
    }

    /// The session token: `Authorization: Bearer TOKEN`, else the `orchard_session` cookie.
    var sessionToken: (token: String, viaCookie: Bool)? {
        if let authorization = headers[.authorization] {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" {
                return (String(parts[1]).trimmingCharacters(in: .whitespaces), false)
            }
        }
        if let cookie = cookies["orchard_session"]?.value, !cookie.isEmpty {
            return (cookie, true)
        }
        return nil
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
