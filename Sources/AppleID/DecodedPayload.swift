import JWTKit

/// A payload type for jwt-kit's parser that keeps the decoding error instead of letting jwt-kit fold it into a message.
///
/// jwt-kit's own messages include the decoder's description; this keeps the structured error, from which a reason
/// naming only the claim (never its value) is made.
struct DecodedPayload<Value: Codable & Sendable>: JWTPayload {
    /// The decoded claims, or why they could not be decoded.
    let result: Result<Value, DecodingError>

    /// Never throws: a failure is kept in ``result``.
    init(from decoder: any Decoder) throws {
        do {
            result = .success(try Value(from: decoder))
        } catch let error as DecodingError {
            result = .failure(error)
        } catch {
            result = .failure(.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "unreadable")))
        }
    }

    /// Writes the claims when there are some.
    func encode(to encoder: any Encoder) throws {
        if case .success(let value) = result { try value.encode(to: encoder) }
    }

    /// Deliberately nothing: see ``TokenEnvelope/verify(using:)``.
    func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// The claims, or a `identity_token_malformed` error naming the claim at fault.
    func claims() throws(AppleIDError) -> Value {
        switch result {
        case .success(let value):
            return value
        case .failure(let error):
            throw .malformed(Self.describe(error))
        }
    }

    /// Which claim is at fault and how, without its value.
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context, _ extra: (any CodingKey)? = nil) -> String {
            let keys = (context.codingPath + (extra.map { [$0] } ?? [])).map(\.stringValue).filter { !$0.isEmpty }
            return keys.isEmpty ? "the payload" : "claim '" + keys.joined(separator: ".") + "'"
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context, key)) is missing"
        case .valueNotFound(_, let context): return "\(path(context)) is null"
        case .typeMismatch(_, let context): return "\(path(context)) has the wrong type"
        case .dataCorrupted(let context): return "\(path(context)) is not as Apple sends it"
        @unknown default: return "the payload is not as Apple sends it"
        }
    }
}
