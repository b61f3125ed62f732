public import Foundation

/// When a failed job is tried again: after 2 s, doubling, with jitter, at most 10 minutes apart.
public struct RetryPolicy: Sendable {
    /// The first delay.
    public var initialDelay: Double
    /// The longest delay.
    public var maximumDelay: Double
    /// The fraction of the delay added at random (0.25 = up to 25 % later).
    public var jitter: Double

    /// Creates a policy (the contract's by default).
    public init(initialDelay: Double = 2, maximumDelay: Double = 600, jitter: Double = 0.25) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.jitter = jitter
    }

    /// The delay in seconds before the next try, after `attempts` failed tries (1 for the first failure).
    ///
    /// - Parameter unit: a random value in `0..<1`.
    public func delay(afterAttempts attempts: Int, unit: Double) -> Double {
        let exponent = Double(max(0, min(attempts - 1, 30)))
        let base = min(maximumDelay, initialDelay * pow2(exponent))
        return min(maximumDelay, base * (1 + jitter * unit))
    }

    private func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        for _ in 0..<Int(exponent) { value *= 2 }
        return value
    }
}

extension RandomSource {
    /// A random value in `0..<1`.
    func unit() -> Double {
        let bytes = self.bytes(4)
        let value = bytes.reduce(UInt32(0)) { ($0 << 8) | UInt32($1) }
        return Double(value) / (Double(UInt32.max) + 1)
    }
}

/// A ``RetryPolicy`` with the random source of its jitter: when a failed job is tried again.
public struct Backoff: Sendable {
    /// The delays.
    public let policy: RetryPolicy
    /// The jitter.
    let random: any RandomSource

    /// Creates the backoff of `policy`, jittered by `random`.
    public init(_ policy: RetryPolicy, random: any RandomSource) {
        self.policy = policy
        self.random = random
    }

    /// The time to try again, from `now`, after `attempts` failed tries (1 for the first failure).
    public func retryAt(afterAttempts attempts: Int, from now: Date) -> Date {
        now.addingTimeInterval(policy.delay(afterAttempts: attempts, unit: random.unit()))
    }
}
