import Foundation

/// Tolerant readers for the shapes Apple's claims arrive in (booleans as strings, seconds as integers or floats).
extension KeyedDecodingContainer {
    /// A boolean sent as a JSON boolean or as the string `"true"`/`"false"`; `nil` when absent or null.
    ///
    /// The usual shapes cost one lookup: `decodeIfPresent` answers absent, null and a JSON boolean at once, where asking
    /// `contains`, then `decodeNil`, then `decode` looks the key up three times (`VerifyBenchmark` guards this). It
    /// throws only for a value that is present and not null, which is then read as text.
    package func decodeLenientBoolIfPresent(forKey key: Key) throws -> Bool? {
        do {
            return try decodeIfPresent(Bool.self, forKey: key)
        } catch {}
        if let text = try? decode(String.self, forKey: key) {
            switch text.lowercased() {
            case "true": return true
            case "false": return false
            default: break
            }
        }
        throw DecodingError.typeMismatch(
            Bool.self,
            .init(codingPath: codingPath + [key], debugDescription: "Expected a boolean or \"true\"/\"false\".")
        )
    }

    /// An integer sent as a JSON number or as a string of digits; `nil` when absent or null.
    ///
    /// One lookup for absent, null and a JSON integer, as ``decodeLenientBoolIfPresent(forKey:)``.
    func decodeLenientIntIfPresent(forKey key: Key) throws -> Int? {
        do {
            return try decodeIfPresent(Int.self, forKey: key)
        } catch {}
        if let value = try? decode(Double.self, forKey: key), let exact = Int(exactly: value) { return exact }
        if let text = try? decode(String.self, forKey: key), let value = Int(text) { return value }
        throw DecodingError.typeMismatch(
            Int.self,
            .init(codingPath: codingPath + [key], debugDescription: "Expected an integer.")
        )
    }

    /// An instant sent as seconds since 1970 (integer or fractional).
    ///
    /// Read as an integer first: Apple sends whole seconds, and Foundation reads a JSON number as a `Double` through
    /// `strtod`, which costs more than reading an integer (`VerifyBenchmark` guards this).
    func decodeSeconds(forKey key: Key) throws -> Date {
        if let whole = try? decode(Int64.self, forKey: key) { return Date(timeIntervalSince1970: TimeInterval(whole)) }
        return Date(timeIntervalSince1970: try decode(Double.self, forKey: key))
    }

    /// An instant sent as seconds since 1970; `nil` when absent or null.
    ///
    /// One lookup for absent, null and whole seconds, as ``decodeLenientBoolIfPresent(forKey:)``.
    func decodeSecondsIfPresent(forKey key: Key) throws -> Date? {
        do {
            return try decodeIfPresent(Int64.self, forKey: key).map { Date(timeIntervalSince1970: TimeInterval($0)) }
        } catch {}
        return Date(timeIntervalSince1970: try decode(Double.self, forKey: key))
    }

    /// An audience sent as a string or as a one-element array of strings.
    func decodeSingleAudience(forKey key: Key) throws -> String {
        if let value = try? decode(String.self, forKey: key) { return value }
        let values = try decode([String].self, forKey: key)
        guard values.count == 1, let only = values.first else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: codingPath + [key], debugDescription: "Expected one audience, found \(values.count).")
            )
        }
        return only
    }
}

/// Writers matching ``KeyedDecodingContainer``'s tolerant readers, in the shapes Apple sends.
extension KeyedEncodingContainer {
    /// Writes an instant as whole seconds since 1970.
    mutating func encodeSeconds(_ date: Date, forKey key: Key) throws {
        try encode(Int64(date.timeIntervalSince1970.rounded(.down)), forKey: key)
    }

    /// Writes an instant as whole seconds since 1970, when there is one.
    mutating func encodeSecondsIfPresent(_ date: Date?, forKey key: Key) throws {
        if let date { try encodeSeconds(date, forKey: key) }
    }
}
