public import AppleID
public import Foundation
import Synchronization

/// A wall clock for tests: it stands still until the test moves it.
public final class TestWallClock: WallClock {
    private let current: Mutex<Date>

    /// Creates a clock standing at `start` (by default a fixed instant in 2026).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_790_000_000)) {
        self.current = Mutex(start)
    }

    /// The instant the clock stands at.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward (or back, with a negative interval).
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// Puts the clock at a given instant.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}
