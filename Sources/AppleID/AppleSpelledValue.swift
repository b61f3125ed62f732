/// A value Apple sends as a string from an open set: known values are cases, others are kept as sent. It reads and
/// writes itself (JSON, logs) in Apple's spelling.
public protocol AppleSpelledValue: Codable, CustomStringConvertible {
    /// Reads Apple's spelling; a value it does not know is kept as sent.
    init(rawValue: String)
    /// Apple's spelling.
    var rawValue: String { get }
}

extension AppleSpelledValue {
    /// Apple's spelling.
    public var description: String { rawValue }

    /// Decodes Apple's string.
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    /// Encodes Apple's string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
