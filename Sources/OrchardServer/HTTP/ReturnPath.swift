/// A `return_to` the web flow may send the browser back to: a path on this site, never another site.
///
/// The contract's rule is `^/(?![/\\])[^\\\s]*$`: one leading `/` not followed by `/` or `\` (which browsers read as
/// another host), no backslash anywhere, and no whitespace or control characters (which browsers strip or fold).
public struct ReturnPath: Sendable, Equatable, CustomStringConvertible {
    /// Where the web flow returns when `return_to` is absent.
    public static let defaultPath = ReturnPath(checked: "/account")

    /// The longest `return_to` accepted.
    public static let maximumLength = 512

    /// The path, as checked.
    public let path: String

    private init(checked path: String) {
        self.path = path
    }

    /// Checks `text` against the rule; `nil` for anything else (`https://…`, `//host`, `/\host`, `javascript:`, …).
    public init?(validating text: String) {
        guard text.utf8.count <= Self.maximumLength else { return nil }
        let scalars = Array(text.unicodeScalars)
        guard let first = scalars.first, first == "/" else { return nil }
        if scalars.count > 1, scalars[1] == "/" || scalars[1] == "\\" { return nil }
        for scalar in scalars where scalar == "\\" || Self.isSpaceOrControl(scalar) {
            return nil
        }
        self.init(checked: text)
    }

    /// The path with `error=CODE` added to its query, for an authorization Apple reports as failed.
    public func withError(_ code: String) -> String {
        let (base, fragment) = Self.splitFragment(path)
        let separator = base.contains("?") ? "&" : "?"
        return base + separator + "error=" + code + fragment
    }

    /// The path as a `Location` value: ASCII, anything else percent-encoded.
    public static func location(_ path: String) -> String {
        var result = ""
        for byte in path.utf8 {
            if byte >= 0x21 && byte < 0x7F {
                result.append(Character(Unicode.Scalar(byte)))
            } else {
                result += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return result
    }

    /// The path.
    public var description: String { path }

    private static func splitFragment(_ path: String) -> (String, String) {
        guard let hash = path.firstIndex(of: "#") else { return (path, "") }
        return (String(path[..<hash]), String(path[hash...]))
    }

    /// Whitespace (`\s` in Unicode-aware regular expressions) and every control character (C0, DEL, C1, and the
    /// format characters browsers drop from URLs).
    private static func isSpaceOrControl(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.properties.isWhitespace { return true }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .spaceSeparator: return true
        default: return false
        }
    }
}
