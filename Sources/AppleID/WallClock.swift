public import Foundation

/// The source of the current time for every check that compares against a token's claims or a stored deadline.
///
/// Injected everywhere a decision depends on the time, so tests can move time forward without waiting.
public protocol WallClock: Sendable {
    /// The current instant.
    func now() -> Date
}

/// The machine's real clock.
public struct SystemWallClock: WallClock {
    /// Creates the system clock.
    public init() {}

    /// The current instant, as the system reports it.
    public func now() -> Date { Date() }
}
