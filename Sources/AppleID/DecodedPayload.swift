/// A token's payload decoded as `Value`, keeping the decoding error instead of throwing it: the decoder's own
/// description may quote a claim's value, so the reason is made from the structured error, naming only the claim.
struct DecodedPayload<Value: Decodable & Sendable>: Decodable, Sendable {
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
