import AppleID
import Crypto
public import Foundation

/// A Sign in with Apple client key (the `.p8`) for tests, and a checker of the client secrets signed with it.
public struct AppleIDTestClientKey: Sendable {
    private let privateKey: P256.Signing.PrivateKey

    /// Generates a fresh P-256 key.
    public init() {
        self.privateKey = P256.Signing.PrivateKey()
    }

    /// The key as a `.p8` file holds it: PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    public var privateKeyPEM: String { privateKey.pemRepresentation }

    /// The public key as PEM.
    public var publicKeyPEM: String { privateKey.publicKey.pemRepresentation }

    /// The header and claims of an ES256 JWS, if its signature (raw `r‖s`) verifies with this key; `nil` otherwise.
    public func verifiedParts(of jws: String) -> (header: [String: Any], claims: [String: Any])? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3,
            let headerData = Self.base64URLDecoded(parts[0]),
            let claimsData = Self.base64URLDecoded(parts[1]),
            let signatureData = Self.base64URLDecoded(parts[2]),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            privateKey.publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)),
            let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any],
            let claims = (try? JSONSerialization.jsonObject(with: claimsData)) as? [String: Any]
        else { return nil }
        return (header, claims)
    }

    /// Decodes base64url with or without padding.
    public static func base64URLDecoded(_ text: String) -> Data? {
        Base64URL.decode(text.utf8)
    }
}
