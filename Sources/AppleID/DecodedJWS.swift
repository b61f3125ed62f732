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
    /// The payload's JSON (base64url-decoded), so that the claims are decoded from it without parsing the token again.
    let payload: Data

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
            self.payload = try Self.payload(of: bytes)
        } catch {
            throw .malformed("the token's parts are not base64url, or its header or payload is not a JSON object")
        }
    }

    /// The payload decoded as `Value` (``AppleIdentityClaims`` or ``AppleNotification``).
    /// - Throws: `identity_token_malformed`, naming the claim at fault.
    func claims<Value: Codable & Sendable>(as _: Value.Type) throws(AppleIDError) -> Value {
        let decoded: DecodedPayload<Value>
        do {
            decoded = try JSONDecoder().decode(DecodedPayload<Value>.self, from: payload)
        } catch {
            throw .malformed("the token's payload could not be read")
        }
        return try decoded.claims()
    }

    /// The middle part of `header.payload.signature`, base64url-decoded, on bytes (Foundation's string replacing
    /// bridges through `NSString` and showed in the verify path's profile).
    private static func payload(of bytes: [UInt8]) throws -> Data {
        guard let first = bytes.firstIndex(of: UInt8(ascii: ".")), let last = bytes.lastIndex(of: UInt8(ascii: ".")), first < last else {
            throw AppleIDError.malformed("the token is not three dot-separated parts")
        }
        var base64: [UInt8] = []
        base64.reserveCapacity(last - first + 3)
        for byte in bytes[(first + 1)..<last] {
            switch byte {
            case UInt8(ascii: "-"): base64.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): base64.append(UInt8(ascii: "/"))
            default: base64.append(byte)
            }
        }
        while base64.count % 4 != 0 { base64.append(UInt8(ascii: "=")) }
        guard let data = Data(base64Encoded: Data(base64)) else { throw AppleIDError.malformed("the payload is not base64url") }
        return data
    }
}
