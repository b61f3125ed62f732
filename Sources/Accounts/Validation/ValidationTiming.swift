import AppleID
public import Foundation

/// When an account's refresh token is next due for validation.
public struct ValidationTiming: Sendable {
    /// `ORCHARD_REFRESH_VALIDATION_INTERVAL`.
    let interval: Duration
    /// The jitter.
    let random: any RandomSource

    /// Creates the timing for `interval`.
    public init(interval: Duration, random: any RandomSource) {
        self.interval = interval
        self.random = random
    }

    /// One interval after a validation at `now`, plus up to 10 % (at most an hour) of jitter, never earlier: accounts
    /// created together spread out and none is validated twice in an interval.
    public func next(after now: Date) -> Date {
        let interval = interval.seconds
        return now.addingTimeInterval(interval + min(interval * 0.1, 3600) * random.unit())
    }
}
