/// The shapes of Orchard's opaque ids, checked before a lookup so that a malformed one is refused without one.
enum OpaqueID {
    /// `sess_` and 32 lowercase hex digits.
    static func isSessionID(_ id: String) -> Bool {
        id.utf8.count == 37 && matches(id, prefix: "sess_", longest: 37) { isDigit($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    /// `evt_` and at most 80 lowercase letters, digits or underscores.
    static func isEventID(_ id: String) -> Bool {
        matches(id, prefix: "evt_", longest: 84) { isDigit($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || $0 == UInt8(ascii: "_") }
    }

    /// `prefix` and 32 lowercase hex digits: the ids ``RandomSource/id(_:)`` makes (`aud_`, `whd_`).
    static func isID(_ id: String, prefix: String) -> Bool {
        id.utf8.count == prefix.utf8.count + 32
            && matches(id, prefix: prefix, longest: prefix.utf8.count + 32) { isDigit($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    private static func matches(_ id: String, prefix: String, longest: Int, _ allowed: (UInt8) -> Bool) -> Bool {
        id.hasPrefix(prefix) && id.utf8.count <= longest && id.utf8.dropFirst(prefix.utf8.count).allSatisfy(allowed)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
