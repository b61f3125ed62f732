import AppleID

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
    /// A random id with a prefix (`acct_`, `rev_`, `evt_`, `whd_`, `aud_`): 128 bits, lowercase hex.
    public func id(_ prefix: String) -> String {
        prefix + bytes(16).hexString
    }

    /// A 256-bit random value, base64url without padding (session tokens, nonces).
    public func token() -> String {
        Base64URL.encode(bytes(32))
    }
}
