/// Where secrets' randomness comes from; injected so tests can be exact.
public protocol RandomSource: Sendable {
    /// `count` random bytes.
    func bytes(_ count: Int) -> [UInt8]
}

/// The system's cryptographically secure generator.
public struct SystemRandomSource: RandomSource {
    /// Creates the source.
    public init() {}

    /// `count` bytes from `SystemRandomNumberGenerator`.
    public func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
