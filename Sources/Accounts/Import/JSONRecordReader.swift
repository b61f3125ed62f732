/// Splits a file of JSON records into its records as the file is read, holding one record at a time: JSON Lines (one
/// object a line), or one JSON document whose records are the elements of an array, the document's own or the one
/// under a key of its top-level object (Firebase's `{"users": [...]}`).
///
/// It only finds where each record begins and ends (strings and escapes respected); each record is then decoded on its
/// own. A record's position is its line number in JSON Lines, its 1-based place in the array otherwise.
public struct JSONRecordReader: Sendable {
    /// How the file holds its records.
    public enum Layout: Sendable, Equatable {
        /// One JSON value a line; empty lines are skipped (and counted).
        case lines
        /// The elements of the top-level array (`key` nil), or of the array under `key` in the top-level object.
        case array(key: String?)
    }

    /// One record: where it is, and its bytes (`nil` when it is larger than ``longestRecord``).
    public struct Record: Sendable {
        /// The line number, or the place in the array, from 1.
        public var position: Int
        /// The record's bytes.
        public var bytes: [UInt8]?
    }

    /// The largest record read whole; a larger one is reported without its bytes.
    public static let longestRecord = 1 << 20

    /// How the file holds its records.
    public let layout: Layout
    private var position = 0
    private var buffer: [UInt8] = []
    private var tooLong = false
    // The array layout's scanner.
    private var depth = 0
    private var inString = false
    private var escaped = false
    private var targetDepth: Int?
    private var capturing = false
    private var stringBytes: [UInt8] = []
    private var lastString: [UInt8] = []
    private var lastKey: [UInt8] = []
    private var arrayDone = false
    private var lineHasContent = false
    private var skippingScalar = false

    /// A reader for `layout`.
    public init(layout: Layout) {
        self.layout = layout
        if case .array(nil) = layout { targetDepth = 1 }
    }

    /// Reads the next piece of the file, handing each record it completes to `emit`.
    public mutating func feed(_ bytes: some Collection<UInt8>, _ emit: (Record) throws -> Void) rethrows {
        switch layout {
        case .lines:
            for byte in bytes {
                if byte == UInt8(ascii: "\n") {
                    try endLine(emit)
                } else {
                    append(byte)
                    if !Self.isSpace(byte) { lineHasContent = true }
                }
            }
        case .array(let key):
            for byte in bytes { try scan(byte, key: key, emit) }
        }
    }

    /// The end of the file: hands over a last line without its newline.
    public mutating func finish(_ emit: (Record) throws -> Void) rethrows {
        if case .lines = layout, !buffer.isEmpty || tooLong || lineHasContent { try endLine(emit) }
    }

    /// Whether the array layout found its array (a document without one holds no records).
    public var foundArray: Bool { targetDepth != nil }

    private mutating func append(_ byte: UInt8) {
        guard !tooLong else { return }
        if buffer.count >= Self.longestRecord {
            tooLong = true
            buffer.removeAll(keepingCapacity: false)
        } else {
            buffer.append(byte)
        }
    }

    private mutating func endLine(_ emit: (Record) throws -> Void) rethrows {
        position += 1
        defer {
            buffer.removeAll(keepingCapacity: true)
            tooLong = false
            lineHasContent = false
        }
        guard lineHasContent || tooLong else { return }
        try emit(Record(position: position, bytes: tooLong ? nil : buffer))
    }

    private mutating func scan(_ byte: UInt8, key: String?, _ emit: (Record) throws -> Void) rethrows {
        if capturing { append(byte) }
        if inString {
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
                if depth == 1 { lastString = stringBytes }
            } else if depth == 1, stringBytes.count < 64 {
                stringBytes.append(byte)
            }
            return
        }
        let inArray = !arrayDone && !capturing && targetDepth == depth
        switch byte {
        case UInt8(ascii: "\""):
            if inArray { try scalar(emit) }
            inString = true
            stringBytes.removeAll(keepingCapacity: true)
        case UInt8(ascii: ":") where depth == 1:
            lastKey = lastString
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            if inArray {
                skippingScalar = false
                capturing = true
                position += 1
                buffer = [byte]
            }
            if byte == UInt8(ascii: "["), targetDepth == nil, depth == 1, let key, lastKey == Array(key.utf8) {
                targetDepth = 2
            }
            depth += 1
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            depth -= 1
            if let targetDepth {
                if capturing, depth == targetDepth {
                    capturing = false
                    try emit(Record(position: position, bytes: tooLong ? nil : buffer))
                    buffer.removeAll(keepingCapacity: true)
                    tooLong = false
                } else if depth == targetDepth - 1, byte == UInt8(ascii: "]"), !capturing {
                    arrayDone = true
                }
            }
        case UInt8(ascii: ","):
            if inArray { skippingScalar = false }
        default:
            // A scalar element of the array (a number, true, null): a record that is no object.
            if inArray, !Self.isSpace(byte) { try scalar(emit) }
        }
    }

    /// An element of the array that is no object or array: reported once, as a record without content.
    private mutating func scalar(_ emit: (Record) throws -> Void) rethrows {
        guard !skippingScalar else { return }
        skippingScalar = true
        position += 1
        try emit(Record(position: position, bytes: []))
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
    }
}
