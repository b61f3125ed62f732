import ExtrasBase64
public import Foundation

/// base64url (RFC 4648 §5) without padding: the one encoder and decoder of every Orchard module (random tokens, the
/// parts of a JWS).
///
/// Both are swift-extras-base64's (which jwt-kit already builds), with its URL alphabet: no character is translated
/// here, as it would be byte by byte around Foundation's base64. `VerifyBenchmark` guards this.
public enum Base64URL {
    /// `bytes` as base64url text without padding.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Base64.encodeToString(bytes: Array(bytes), options: [.base64UrlAlphabet, .omitPaddingCharacter])
    }

    /// The bytes of base64url `text` (padding optional), or `nil` when it is not base64url.
    public static func decode(_ text: some Collection<UInt8>) -> Data? {
        guard let bytes = try? Base64.decode(bytes: text, options: [.base64UrlAlphabet, .omitPaddingCharacter]) else {
            return nil
        }
        return Data(bytes)
    }
}
