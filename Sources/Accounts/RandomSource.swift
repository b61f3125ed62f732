import AppleID
public import Foundation

/// Where secrets' randomness comes from; injected so tests can be exact.
public protocol RandomSource: Sendable {
    /// `count` random bytes.
    func bytes(_ count: Int) -> [UInt8]
}

/// The system's cryptographically secure generator.
public struct SystemRandomSource: RandomSource {
    /// Creates the source.
    public init() {}

    /// `count` bytes from `SystemRandomNumberGenerator`, eight from each of its values: each value is a system call
    /// (`getrandom`), and a byte at a time made sixteen calls for an id and thirty-two for a session token.
    public func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 7)
        while bytes.count < count {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        bytes.removeLast(bytes.count - count)
        return bytes
    }
}

extension RandomSource {
    /// A random id with a prefix (`acct_`, `rev_`, `aud_`): 128 bits, lowercase hex.
    public func id(_ prefix: String) -> String {
        prefix + bytes(16).hexString
    }

    /// An id with a prefix for a row written at `at` (`evt_`, `whd_`): 128 bits in lowercase hex, as ``id(_:)``, of which
    /// the first 48 are `at`'s milliseconds and the other 80 random. Rows written together then share the pages of their
    /// table's id index, where random ids put each on a page of its own: one page less to write per row.
    public func id(_ prefix: String, at: Date) -> String {
        let milliseconds = UInt64(max(0, (at.timeIntervalSince1970 * 1000).rounded(.down)))
        let time = (0..<6).map { UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - $0))) }
        return prefix + (time + bytes(10)).hexString
    }

    /// A 256-bit random value, base64url without padding (session tokens, nonces).
    public func token() -> String {
        Base64URL.encode(bytes(32))
    }
}
