public import AppleID
import Foundation
import Synchronization

/// Spaces the log lines about a failure that repeats, such as a database that is down: a failure is logged when no line
/// about its key was written in the last ``interval`` (by the injected clock), saying how many failures went unlogged
/// since the previous line; the first success after failures of which one was logged says how many failures there were.
///
/// The spacing holds across successes: a condition that comes and goes (another process taking SQLite's lock now and
/// then) makes at most one failure line and one recovery line per interval, not two lines per failure. Keys are spaced
/// apart (a job kind each, say), so that one failing key does not silence another.
public final class FailureLogSpacing: Sendable {
    /// The shortest time between two failure lines about one key.
    public let interval: Duration
    private let clock: any WallClock
    private let keys = Mutex<[String: KeyState]>([:])

    private struct KeyState {
        /// When a failure line about this key was last written.
        var lastLogged: Date
        /// Failures since that line that were not logged.
        var unlogged = 0
        /// Failures since the last success.
        var failures = 0
        /// Whether one of those failures was logged (then the success that ends them is logged too).
        var failureLogged = false
    }

    /// Creates the spacing.
    /// - Parameters:
    ///   - clock: The clock that spaces the lines.
    ///   - interval: The shortest time between two failure lines about one key.
    public init(clock: any WallClock, interval: Duration) {
        self.clock = clock
        self.interval = interval
    }

    /// Counts a failure. Returns how many failures of the key went unlogged since its previous line when this one is to
    /// be logged (`0` for the key's first), `nil` when it is not.
    public func failure(_ key: String = "") -> Int? {
        keys.withLock { keys -> Int? in
            // Read under the lock, so that concurrent failures see the times in the order they log them.
            let now = clock.now()
            guard var state = keys[key] else {
                keys[key] = KeyState(lastLogged: now, failures: 1, failureLogged: true)
                return 0
            }
            state.failures += 1
            // A clock set back counts as the interval having passed, rather than silencing the key until it catches up.
            if now >= state.lastLogged, now.timeIntervalSince(state.lastLogged) < interval.seconds {
                state.unlogged += 1
                keys[key] = state
                return nil
            }
            let unlogged = state.unlogged
            state.lastLogged = now
            state.unlogged = 0
            state.failureLogged = true
            keys[key] = state
            return unlogged
        }
    }

    /// Ends the key's failures. Returns how many there were since the previous success when one of them was logged,
    /// `nil` otherwise (no failures, or none logged: the recovery of a failure the log never mentioned is not news).
    public func success(_ key: String = "") -> Int? {
        keys.withLock { keys -> Int? in
            guard var state = keys[key], state.failures > 0 else { return nil }
            let failures = state.failures
            let logged = state.failureLogged
            state.failures = 0
            state.failureLogged = false
            keys[key] = state
            return logged ? failures : nil
        }
    }
}
