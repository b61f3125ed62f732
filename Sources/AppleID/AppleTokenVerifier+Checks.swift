import Crypto
import CryptoExtras
import Foundation
import JWTKit

/// The verification steps, each on its own, shared by verification and inspection.
extension AppleTokenVerifier {
    /// Steps 2 and 3: `alg` exactly RS256 (before any key is touched), a `kid` present in Apple's key set, and a
    /// signature that verifies with exactly that key.
    ///
    /// jwt-kit falls back to a collection's default key for an unknown `kid`; here the key is looked up by this code and
    /// the signature checked with exactly that key (swift-crypto's RSASSA-PKCS1-v1_5 over SHA-256, as RS256 is), on
    /// the bytes the token was parsed from once, so no other key can ever be used.
    func checkSignature(_ jws: DecodedJWS) async throws(AppleIDError) {
        guard let alg = jws.header.alg else { throw .signature("the header names no alg") }
        guard alg == "RS256" else { throw .signature("alg \(Self.printable(alg)) is not RS256") }
        guard let kid = jws.header.kid, !kid.isEmpty else { throw .signature("the header names no kid") }
        let key = try await keys.verifyingKey(for: kid)
        let valid = key.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: jws.signature),
            for: SHA256.hash(data: jws.signingInput),
            padding: .insecurePKCS1v1_5
        )
        guard valid else {
            throw .signature("the signature does not verify with Apple's key \(AppleKeySet.printable(kid))")
        }
    }

    /// Step 4: `iss` is exactly Apple's issuer.
    static func checkIssuer(_ envelope: TokenEnvelope) throws(AppleIDError) {
        guard let iss = envelope.iss else { throw .issuer("the token names no iss") }
        guard iss == appleIssuer else { throw .issuer("iss \(printable(iss)) is not \(appleIssuer)") }
    }

    /// Step 5: `aud` names exactly one audience, one of `allowed`, and `expected` when given.
    static func checkAudience(_ envelope: TokenEnvelope, allowed: [String], expected: String?) throws(AppleIDError) {
        guard let audiences = envelope.aud, let aud = audiences.first else { throw .audience("the token names no aud") }
        guard audiences.count == 1 else { throw .audience("the token names \(audiences.count) audiences; Apple names one") }
        guard allowed.contains(aud) else { throw .audience("aud \(printable(aud)) is not a configured client id") }
        if let expected, aud != expected {
            throw .audience("aud \(printable(aud)) is not the requested client_id \(printable(expected))")
        }
    }

    /// Step 6a: the token has not expired: `exp` is later than `now` − leeway.
    func checkExpiry(_ envelope: TokenEnvelope, now: Date) throws(AppleIDError) {
        guard let exp = envelope.exp else { throw .expired("the token names no exp") }
        guard exp > now.addingTimeInterval(-leeway.seconds) else {
            throw .expired("expired at \(Self.timestamp(exp)), before \(Self.timestamp(now)) with \(leeway) leeway")
        }
    }

    /// Step 6b: the token was not issued in the future: `iat` is not later than `now` + leeway.
    func checkIssuedAt(_ envelope: TokenEnvelope, now: Date) throws(AppleIDError) {
        guard let iat = envelope.iat else { throw .expired("the token names no iat") }
        guard iat <= now.addingTimeInterval(leeway.seconds) else {
            throw .expired("issued at \(Self.timestamp(iat)), after \(Self.timestamp(now)) plus \(leeway) leeway")
        }
    }

    /// The nonce rule of inspection: the claim is present and is `raw` or its SHA-256.
    static func checkNonce(_ envelope: TokenEnvelope, raw: String) throws(AppleIDError) {
        guard let claim = envelope.nonce else { throw .nonceMissing() }
        guard AppleNonce.matches(claim: claim, raw: raw) else { throw .nonceMismatch() }
    }

    /// An instant as RFC 3339 in UTC.
    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    /// An unverified claim value as it may appear in a reason: quoted, shortened, without control characters.
    static func printable(_ value: String) -> String {
        let cleaned = String(value.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }.map(Character.init))
        return cleaned.count > 80 ? "'\(cleaned.prefix(80))…'" : "'\(cleaned)'"
    }
}
