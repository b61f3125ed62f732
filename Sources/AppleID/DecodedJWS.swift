import Foundation
import JWTKit

/// A compact JWS split and decoded, before anything about it is trusted.
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

    /// What the payload says the token is: a notification when it has `events`, else an identity token.
    var kind: TokenInspection.Kind { envelope.hasEvents ? .notification : .identityToken }

    /// Step (a): three base64url parts whose header and payload are JSON objects.
    /// - Throws: `identity_token_malformed`.
    init(_ token: String) throws(AppleIDError) {
        let bytes = Array(token.utf8)
        guard bytes.count(where: { $0 == UInt8(ascii: ".") }) == 2 else {
            throw .malformed("the token is not three dot-separated parts")
        }
        do {
            let parsed = try DefaultJWTParser().parse(bytes, as: TokenEnvelope.self)
            self.token = token
            self.header = parsed.header
            self.envelope = parsed.payload
            self.signature = parsed.signature
            self.signingInput = bytes[..<(bytes.lastIndex(of: UInt8(ascii: ".")) ?? bytes.endIndex)]
        } catch {
            throw .malformed("the token's parts are not base64url, or its header or payload is not a JSON object")
        }
    }

    /// The payload decoded as `Value` (``AppleIdentityClaims`` or ``AppleNotification``).
    /// - Throws: `identity_token_malformed`, naming the claim at fault.
    func claims<Value: Codable & Sendable>(as _: Value.Type) throws(AppleIDError) -> Value {
        let decoded: DecodedPayload<Value>
        do {
            decoded = try DefaultJWTParser().parse(Array(token.utf8), as: DecodedPayload<Value>.self).payload
        } catch {
            throw .malformed("the token's payload could not be read")
        }
        return try decoded.claims()
    }
}
