import Foundation

/// Unpadded base64url (RFC 4648 §5), the alphabet of every JWS segment.
///
/// The emulator keeps its own small codec rather than borrowing the client's JOSE library, so a bug in that library
/// cannot hide on both sides of the wire.
enum Base64URL {
    /// Encodes bytes as unpadded base64url.
    static func encode(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes unpadded (or padded) base64url; `nil` when the text is not base64url.
    static func decode(_ text: some StringProtocol) -> Data? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "=") }) else {
            return nil
        }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 = base64.replacingOccurrences(of: "=", with: "")
        let remainder = base64.count % 4
        guard remainder != 1 else { return nil }
        if remainder > 0 {
            base64 += String(repeating: "=", count: 4 - remainder)
        }
        return Data(base64Encoded: base64)
    }
}
