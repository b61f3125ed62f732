import Foundation
import JWTKit
import Synchronization

/// A compact JWS split and decoded, before anything about it is trusted.
///
/// The token is cut into its parts on bytes and each part is base64url-decoded once. Its payload is JSON-decoded once:
/// ``decode(_:as:)`` decodes the caller's claims and makes the envelope the checks read from them. Apple signs
/// every token of a key with the same header, so decoded headers are kept (a few, by their exact bytes) instead of
/// being decoded again. Not jwt-kit's parser: it decodes the header and payload with a new decoder on each call and
/// hands back only the type it was asked for, so the claims would be decoded twice. `VerifyBenchmark` guards this.
struct DecodedJWS: Sendable {
    /// The token as received.
    let token: String
    /// The decoded header.
    let header: JWTHeader
    /// The claims the checks read.
    let envelope: TokenEnvelope
    /// The signature's bytes (base64url-decoded).
    let signature: Data
    /// What the signature signs: the token up to its second dot (`header.payload`).
    let signingInput: ArraySlice<UInt8>
    /// The payload's JSON (base64url-decoded), so that the claims are decoded from it without parsing the token again.
    let payload: Data

    /// What the payload says the token is: a notification when it has `events`, else an identity token.
    var kind: TokenInspection.Kind { envelope.hasEvents ? .notification : .identityToken }

    /// Step (a): three base64url parts whose header and payload are JSON objects.
    /// - Throws: `identity_token_malformed`.
    init(_ token: String) throws(AppleIDError) {
        let parts = try Parts(token)
        let envelope: TokenEnvelope
        do {
            envelope = try Self.decoder.decode(TokenEnvelope.self, from: parts.payload)
        } catch {
            throw Self.unreadable
        }
        self.init(token: token, parts: parts, envelope: envelope)
    }

    private init(token: String, parts: Parts, envelope: TokenEnvelope) {
        self.token = token
        self.header = parts.header
        self.envelope = envelope
        self.signature = parts.signature
        self.signingInput = parts.signingInput
        self.payload = parts.payload
    }

    /// Step (a) and the claims as `Value`, from one decode of the payload: the envelope the checks read is made from the
    /// claims, which hold all of it.
    /// - Throws: `identity_token_malformed`, naming the claim at fault when the payload is a JSON object.
    static func decode<Value: EnvelopeClaims>(_ token: String, as _: Value.Type) throws(AppleIDError) -> (DecodedJWS, Value) {
        let parts = try Parts(token)
        let decoded: DecodedPayload<Value>
        do {
            decoded = try Self.decoder.decode(DecodedPayload<Value>.self, from: parts.payload)
        } catch {
            throw unreadable
        }
        if case .failure(.typeMismatch(_, let context)) = decoded.result, context.codingPath.isEmpty {
            throw unreadable
        }
        let claims = try decoded.claims()
        return (DecodedJWS(token: token, parts: parts, envelope: claims.envelope), claims)
    }

    /// The payload decoded as `Value` (``AppleIdentityClaims`` or ``AppleNotification``).
    /// - Throws: `identity_token_malformed`, naming the claim at fault.
    func claims<Value: Decodable & Sendable>(as _: Value.Type) throws(AppleIDError) -> Value {
        let decoded: DecodedPayload<Value>
        do {
            decoded = try Self.decoder.decode(DecodedPayload<Value>.self, from: payload)
        } catch {
            throw .malformed("the token's payload could not be read")
        }
        return try decoded.claims()
    }

    /// One decoder for every token, not one per call: it keeps no state between calls (`VerifyBenchmark` guards this).
    static let decoder = JSONDecoder()

    private static var unreadable: AppleIDError {
        .malformed("the token's parts are not base64url, or its header or payload is not a JSON object")
    }

    /// The three parts, base64url-decoded, the header also JSON-decoded.
    private struct Parts {
        let header: JWTHeader
        let signature: Data
        let signingInput: ArraySlice<UInt8>
        let payload: Data

        init(_ token: String) throws(AppleIDError) {
            let bytes = Array(token.utf8)
            guard let first = bytes.firstIndex(of: UInt8(ascii: ".")), let last = bytes.lastIndex(of: UInt8(ascii: ".")),
                first < last, !bytes[(first + 1)..<last].contains(UInt8(ascii: "."))
            else {
                throw .malformed("the token is not three dot-separated parts")
            }
            guard let payload = Base64URL.decode(bytes[(first + 1)..<last]),
                let signature = Base64URL.decode(bytes[(last + 1)...]),
                let header = HeaderCache.shared.header(bytes[..<first])
            else {
                throw unreadable
            }
            self.header = header
            self.signature = signature
            self.signingInput = bytes[..<last]
            self.payload = payload
        }
    }

    /// Decoded headers by their exact base64url bytes. Apple's headers differ only by `kid`, so a handful covers every
    /// genuine token. Anyone can send a header (notifications are anonymous), so when the cache is full it starts over
    /// rather than keep the first comers for good.
    private final class HeaderCache: Sendable {
        static let shared = HeaderCache()
        /// How many headers are kept; the longest header kept.
        static let capacity = 16
        static let longest = 256

        private let headers = Mutex<[ArraySlice<UInt8>: JWTHeader]>([:])

        func header(_ part: ArraySlice<UInt8>) -> JWTHeader? {
            if let known = headers.withLock({ $0[part] }) { return known }
            guard let json = Base64URL.decode(part), let header = try? DecodedJWS.decoder.decode(JWTHeader.self, from: json) else {
                return nil
            }
            if part.count <= Self.longest {
                headers.withLock { headers in
                    // A copy of the part, not a slice of the whole token.
                    if headers.count >= Self.capacity { headers.removeAll(keepingCapacity: true) }
                    headers[ArraySlice(Array(part))] = header
                }
            }
            return header
        }
    }
}
