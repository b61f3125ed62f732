import Crypto
import Foundation

/// The nonce rules: native apps send Apple the SHA-256 (lowercase hex) of the nonce, the web flow the nonce itself.
///
/// Orchard stores the nonces it issues by their hash, so ``lookupKeys(forClaim:)`` gives the stored keys a claim can
/// stand for, and ``matches(claim:raw:)`` checks a claim against a known raw nonce.
public enum AppleNonce {
    /// The SHA-256 of `raw`'s UTF-8 bytes, as 64 lowercase hexadecimal characters.
    public static func hash(_ raw: String) -> String {
        SHA256.hash(utf8: raw).hexString
    }

    /// Whether a token's `nonce` claim is `raw` itself or its ``hash(_:)``.
    ///
    /// Both comparisons always run, and each compares SHA-256 digests (whose equality swift-crypto checks in constant
    /// time), so the time taken says nothing about how much of the claim matched.
    public static func matches(claim: String, raw: String) -> Bool {
        matches(claim: claim, nonce: Hashed(raw))
    }

    /// ``matches(claim:raw:)`` for a caller in this package that also needs the raw nonce's ``hash(_:)`` (to look the
    /// nonce up by it): the raw nonce is hashed once for both.
    package static func matches(claim: String, nonce: Hashed) -> Bool {
        let claimDigest = SHA256.hash(utf8: claim)
        let equalsRaw = claimDigest == nonce.digest
        let equalsHash = claimDigest == SHA256.hash(utf8: nonce.hex)
        return equalsRaw || equalsHash
    }

    /// A raw nonce's SHA-256, as the digest and as its ``hash(_:)`` text.
    package struct Hashed: Sendable {
        /// The digest of the raw nonce's UTF-8 bytes.
        let digest: SHA256.Digest
        /// The digest as 64 lowercase hexadecimal characters: ``AppleNonce/hash(_:)`` of the raw nonce.
        package let hex: String

        package init(_ raw: String) {
            digest = SHA256.hash(utf8: raw)
            hex = digest.hexString
        }
    }

    /// The stored-hash keys under which the nonce behind `claim` may have been stored.
    ///
    /// The claim is either the raw nonce (stored as `hash(claim)`) or already its hash (stored as the claim itself,
    /// which then looks like 64 lowercase hex characters). The first element is always `hash(claim)`.
    public static func lookupKeys(forClaim claim: String) -> [String] {
        var keys = [hash(claim)]
        if looksLikeHash(claim) { keys.append(claim) }
        return keys
    }

    /// Whether `value` has the shape of a ``hash(_:)`` result: 64 lowercase hexadecimal characters.
    static func looksLikeHash(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        return bytes.count == 64 && bytes.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
