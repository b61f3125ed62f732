public import Foundation

/// base64url (RFC 4648 §5) without padding: the one encoder and decoder of every Orchard module (random tokens, the
/// parts of a JWS).
///
/// Both work on bytes around Foundation's base64: replacing characters in a `String` bridges through `NSString`, which
/// showed in the verify path's profile.
public enum Base64URL {
    /// `bytes` as base64url text without padding.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let base64 = Data(bytes).base64EncodedData()
        var text: [UInt8] = []
        text.reserveCapacity(base64.count)
        for byte in base64 {
            switch byte {
            case UInt8(ascii: "+"): text.append(UInt8(ascii: "-"))
            case UInt8(ascii: "/"): text.append(UInt8(ascii: "_"))
            case UInt8(ascii: "="): break
            default: text.append(byte)
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes of base64url `text` (padding optional), or `nil` when it is not base64url.
    public static func decode(_ text: some Collection<UInt8>) -> Data? {
        var base64: [UInt8] = []
        base64.reserveCapacity(text.count + 3)
        for byte in text {
            switch byte {
            case UInt8(ascii: "-"): base64.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): base64.append(UInt8(ascii: "/"))
            default: base64.append(byte)
            }
        }
        while base64.count % 4 != 0 { base64.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(base64))
    }
}
