import Foundation

/// Random identifiers shaped like the ones Apple hands out.
enum RandomToken {
    private static let alphanumerics = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
    private static let lowercaseAlphanumerics = Array("abcdefghijklmnopqrstuvwxyz0123456789")
    private static let hexDigits = Array("0123456789abcdef")

    /// `count` random letters and digits, e.g. a key id such as `dMlERBaFdK`.
    static func alphanumeric(_ count: Int) -> String {
        String((0..<count).map { _ in alphanumerics.randomElement()! })
    }

    /// `count` random lowercase letters and digits, e.g. the local part of a private relay address.
    static func lowercaseAlphanumeric(_ count: Int) -> String {
        String((0..<count).map { _ in lowercaseAlphanumerics.randomElement()! })
    }

    /// `count` random lowercase hexadecimal digits.
    static func lowercaseHex(_ count: Int) -> String {
        String((0..<count).map { _ in hexDigits.randomElement()! })
    }

    /// `byteCount` random bytes as unpadded base64url (16 bytes give the 22 characters of an Apple `jti`).
    static func base64URL(byteCount: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// An opaque Apple credential: `prefix` + 32 hex digits + `.0.` + 4 characters + `.` + 22 characters,
    /// the shape of Apple's authorization codes (`c…`), refresh tokens (`r…`) and access tokens (`a…`).
    static func appleOpaque(prefix: Character) -> String {
        "\(prefix)\(lowercaseHex(32)).0.\(lowercaseAlphanumeric(4)).\(base64URL(byteCount: 16))"
    }

    /// A subject in Apple's format, `000123.<32 lowercase hex>.0456`.
    static func appleSubject() -> String {
        let team = Int.random(in: 0...999_999)
        let suffix = Int.random(in: 0...9_999)
        return "\(String(format: "%06d", team)).\(lowercaseHex(32)).\(String(format: "%04d", suffix))"
    }
}
