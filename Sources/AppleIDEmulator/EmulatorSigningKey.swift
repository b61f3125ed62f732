import Crypto
import CryptoExtras
import Foundation

/// One of the emulator's RSA-2048 keys: it signs identity tokens and notifications (RS256), and is published at
/// `/auth/keys` under its `kid`.
struct EmulatorSigningKey: Sendable {
    /// The key id, 10 letters and digits like Apple's (e.g. `UaIIFY2fW4`).
    let kid: String
    private let privateKey: _RSA.Signing.PrivateKey

    /// Generates a fresh key with a random `kid`.
    ///
    /// - Throws: ``AppleEmulatorError/Kind/signingFailed`` when the key cannot be generated.
    static func generate() throws -> Self {
        do {
            return Self(kid: RandomToken.alphanumeric(10), privateKey: try _RSA.Signing.PrivateKey(keySize: .bits2048))
        } catch {
            throw AppleEmulatorError(.signingFailed, reason: "could not generate an RSA key", underlying: error)
        }
    }

    private init(kid: String, privateKey: _RSA.Signing.PrivateKey) {
        self.kid = kid
        self.privateKey = privateKey
    }

    /// The public key as Apple publishes it: `{"kty":"RSA","kid","use":"sig","alg":"RS256","n","e"}`.
    func jwk() throws -> [String: any Sendable] {
        let primitives = try privateKey.publicKey.getKeyPrimitives()
        return [
            "kty": "RSA",
            "kid": kid,
            "use": "sig",
            "alg": "RS256",
            "n": Base64URL.encode(primitives.modulus),
            "e": Base64URL.encode(primitives.publicExponent),
        ]
    }

    /// Signs a compact JWS over the given header and payload JSON with RSASSA-PKCS1-v1_5 and SHA-256.
    ///
    /// - Throws: ``AppleEmulatorError/Kind/signingFailed`` when the signature cannot be made.
    func signCompact(header: Data, payload: Data) throws -> String {
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(payload)
        do {
            let digest = SHA256.hash(data: Data(signingInput.utf8))
            let signature = try privateKey.signature(for: digest, padding: .insecurePKCS1v1_5)
            return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
        } catch {
            throw AppleEmulatorError(.signingFailed, reason: "could not sign a JWS", underlying: error)
        }
    }
}
