public import AppleID
import Crypto
import CryptoExtras
public import Foundation

/// An Apple-like RSA signing key for tests, with its JWKS, and a signer of arbitrary JWS (any header, any algorithm).
///
/// Generating an RSA-2048 key takes a moment: make one per suite (e.g. in a `static let`) and share it.
public struct AppleIDTestTokens: Sendable {
    /// The key id the JWKS publishes the key under, and the default header `kid`.
    public let kid: String
    private let privateKey: _RSA.Signing.PrivateKey

    /// Generates a fresh RSA-2048 key published under `kid`.
    public init(kid: String = "ORCHARDTEST1") throws {
        self.kid = kid
        self.privateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
    }

    /// The public key as PEM (`-----BEGIN PUBLIC KEY-----`), e.g. for the HS256 key-confusion attack.
    public var publicKeyPEM: String { privateKey.publicKey.pemRepresentation }

    /// The key's JWK: `{"kty": "RSA", "kid", "use": "sig", "alg": "RS256", "n", "e"}`.
    public var jwk: [String: String] {
        let primitives = try? privateKey.publicKey.getKeyPrimitives()
        return [
            "kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
            "n": Self.base64URL(primitives?.modulus ?? Data()),
            "e": Self.base64URL(primitives?.publicExponent ?? Data()),
        ]
    }

    /// A JWKS document holding this key and, optionally, others' JWKs.
    public func jwksJSON(alsoHolding others: [[String: String]] = []) -> Data {
        // Force-try: a dictionary of strings always serializes.
        try! JSONSerialization.data(withJSONObject: ["keys": [jwk] + others], options: [.sortedKeys])
    }

    /// A key source serving ``jwksJSON(alsoHolding:)``.
    public func keySource() -> StaticAppleKeySource {
        // Force-try: the document is a JWKS by construction.
        try! StaticAppleKeySource(json: jwksJSON())
    }

    /// The default header of a genuine-looking token: `{"kid": kid, "alg": "RS256"}`.
    public var header: [String: Any] { ["kid": kid, "alg": "RS256"] }

    /// An RS256 JWS of `claims` signed with this key, under `header` (default ``header``) whatever it says.
    public func sign(_ claims: [String: Any], header: [String: Any]? = nil) throws -> String {
        let input = try Self.signingInput(header: header ?? self.header, claims: claims)
        let signature = try privateKey.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + Self.base64URL(signature.rawRepresentation)
    }

    /// An RS256 JWS whose payload is exactly `payload`, JSON or not: the fuzzers reach the claims' decoding with it.
    public func sign(payload: Data, header: [String: Any]? = nil) throws -> String {
        let headerJSON = try JSONSerialization.data(withJSONObject: header ?? self.header, options: [.sortedKeys])
        let input = Self.base64URL(headerJSON) + "." + Self.base64URL(payload)
        let signature = try privateKey.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + Self.base64URL(signature.rawRepresentation)
    }

    /// An unsecured JWS: header `alg` `none` (with this key's `kid`) and an empty signature.
    public func unsecured(_ claims: [String: Any]) throws -> String {
        try Self.signingInput(header: ["kid": kid, "alg": "none"], claims: claims) + "."
    }

    /// An HS256 JWS (with this key's `kid`) whose HMAC key is `secret`: with the public key's PEM, the key-confusion attack.
    public func hs256(_ claims: [String: Any], secret: String) throws -> String {
        let input = try Self.signingInput(header: ["kid": kid, "alg": "HS256"], claims: claims)
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return input + "." + Self.base64URL(Data(mac))
    }

    /// An ES256 JWS (with this key's `kid`) signed with a fresh P-256 key.
    public func es256(_ claims: [String: Any]) throws -> String {
        let input = try Self.signingInput(header: ["kid": kid, "alg": "ES256"], claims: claims)
        let signature = try P256.Signing.PrivateKey().signature(for: Data(input.utf8))
        return input + "." + Self.base64URL(signature.rawRepresentation)
    }

    /// Identity-token claims as Apple sends them, issued at `iat` and valid `lifetime` seconds.
    public static func identityClaims(
        aud: String,
        iat: Date,
        lifetime: TimeInterval = 86_400,
        sub: String = "000123.0123456789abcdef0123456789abcdef.0456",
        nonce: String? = nil,
        email: String? = "user@privaterelay.appleid.com"
    ) -> [String: Any] {
        var claims: [String: Any] = [
            "iss": AppleTokenVerifier.appleIssuer, "aud": aud, "sub": sub,
            "iat": Int(iat.timeIntervalSince1970), "exp": Int(iat.timeIntervalSince1970 + lifetime),
            "auth_time": Int(iat.timeIntervalSince1970), "nonce_supported": true, "c_hash": "abcdefghijklmnop",
        ]
        if let nonce { claims["nonce"] = nonce }
        if let email {
            claims["email"] = email
            claims["email_verified"] = true
            claims["is_private_email"] = true
        }
        return claims
    }

    /// Notification claims as Apple sends them, with `events` encoded as a string (or as an object).
    public static func notificationClaims(
        aud: String,
        iat: Date,
        type: String,
        sub: String = "000123.0123456789abcdef0123456789abcdef.0456",
        eventsAsString: Bool = true,
        jti: String = "test-jti-0001"
    ) -> [String: Any] {
        let events: [String: Any] = ["type": type, "sub": sub, "event_time": Int(iat.timeIntervalSince1970 * 1000)]
        let eventsValue: Any =
            if eventsAsString {
                // Force-try: a dictionary of strings and numbers always serializes.
                String(decoding: try! JSONSerialization.data(withJSONObject: events, options: [.sortedKeys]), as: UTF8.self)
            } else {
                events
            }
        return [
            "iss": AppleTokenVerifier.appleIssuer, "aud": aud, "jti": jti, "events": eventsValue,
            "iat": Int(iat.timeIntervalSince1970), "exp": Int(iat.timeIntervalSince1970 + 86_400),
        ]
    }

    /// `base64url(header).base64url(claims)`.
    public static func signingInput(header: [String: Any], claims: [String: Any]) throws -> String {
        let headerJSON = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        let claimsJSON = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        return base64URL(headerJSON) + "." + base64URL(claimsJSON)
    }

    /// Base64url without padding (RFC 7515), for building malformed tokens by hand.
    public static func base64URL(_ data: Data) -> String {
        Base64URL.encode(data)
    }
}
