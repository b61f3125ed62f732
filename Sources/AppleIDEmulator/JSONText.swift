import Foundation

/// Writes JSON objects with their keys in a chosen order, as Apple's own tokens and answers list them.
///
/// Values are strings, booleans, integers, finite doubles, arrays of values and `[String: any Sendable]` objects;
/// anything else throws.
enum JSONText {
    /// The order in which Apple writes the claims of identity tokens and notifications; other keys follow, sorted.
    static let appleClaimOrder = [
        "iss", "aud", "exp", "iat", "sub", "jti", "events", "nonce", "c_hash", "at_hash", "email", "email_verified",
        "is_private_email", "auth_time", "nonce_supported", "real_user_status", "transfer_sub", "org_id",
    ]

    /// The order of a JWS header's fields as Apple writes them.
    static let headerOrder = ["kid", "alg"]

    /// Writes `pairs` as one JSON object, in the order given.
    static func object(_ pairs: [(key: String, value: any Sendable)]) throws -> Data {
        var text = "{"
        for (index, pair) in pairs.enumerated() {
            if index > 0 { text += "," }
            text += try fragment(pair.key) + ":" + value(pair.value, order: [])
        }
        text += "}"
        return Data(text.utf8)
    }

    /// Writes a dictionary as one JSON object: keys named in `order` first, in that order, then the rest sorted; nested
    /// objects follow the same order.
    static func object(_ dictionary: [String: any Sendable], order: [String] = appleClaimOrder) throws -> Data {
        Data(try objectText(dictionary, order: order).utf8)
    }

    private static func objectText(_ dictionary: [String: any Sendable], order: [String]) throws -> String {
        let pairs = try orderedPairs(dictionary, order: order).map { try fragment($0.key) + ":" + value($0.value, order: order) }
        return "{" + pairs.joined(separator: ",") + "}"
    }

    private static func orderedPairs(_ dictionary: [String: any Sendable], order: [String]) -> [(key: String, value: any Sendable)] {
        let known = order.compactMap { key in dictionary[key].map { (key: key, value: $0) } }
        let rest = dictionary.keys.filter { !order.contains($0) }.sorted().map { (key: $0, value: dictionary[$0]!) }
        return known + rest
    }

    private static func value(_ value: any Sendable, order: [String]) throws -> String {
        switch value {
        case let object as [String: any Sendable]:
            return try objectText(object, order: order)
        case let array as [any Sendable]:
            return "[" + (try array.map { try self.value($0, order: order) }).joined(separator: ",") + "]"
        default:
            return try fragment(value)
        }
    }

    private static func fragment(_ value: any Sendable) throws -> String {
        switch value {
        case let bool as Bool:
            return bool ? "true" : "false"
        case let integer as any BinaryInteger:
            return "\(integer)"
        case let string as String:
            return try serialized(string)
        case let double as Double where double.isFinite:
            return try serialized(double)
        default:
            throw AppleEmulatorError.invalidClaims("cannot write \(type(of: value)) as JSON")
        }
    }

    private static func serialized(_ value: Any) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }
}
