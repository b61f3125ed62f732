public import AppleID
public import Foundation
import Synchronization

/// Spaces the log lines about a failure that repeats, such as a database that is down: the first failure of a run is
/// logged at once, then at most one line per ``interval`` (by the injected clock), each saying how many failures went
/// unlogged since the last; the first success after a run says how many failures the run had.
///
/// Runs are kept by key (a job kind, say), so that one failing key does not silence another.
public final class FailureLogSpacing: Sendable {
    /// The shortest time between two lines about one key's failures.
    public let interval: Duration
    private let clock: any WallClock
    private let runs = Mutex<[String: Run]>([:])

    private struct Run {
        var lastLogged: Date
        var unlogged = 0
        var failures = 1
    }

    /// Creates the spacing.
    /// - Parameters:
    ///   - clock: The clock that spaces the lines.
    ///   - interval: The shortest time between two lines about one key.
    public init(clock: any WallClock, interval: Duration) {
        self.clock = clock
        self.interval = interval
    }

    /// Counts a failure. Returns how many failures went unlogged since the last line when this one is to be logged
    /// (`0` for the first of a run), `nil` when it is not.
    public func failure(_ key: String = "") -> Int? {
        let now = clock.now()
        return runs.withLock { runs -> Int? in
            guard var run = runs[key] else {
                runs[key] = Run(lastLogged: now)
                return 0
            }
            run.failures += 1
            // A clock set back counts as the interval having passed, rather than silencing the key until it catches up.
            if now >= run.lastLogged, now.timeIntervalSince(run.lastLogged) < interval.seconds {
                run.unlogged += 1
                runs[key] = run
                return nil
            }
            let unlogged = run.unlogged
            run.lastLogged = now
            run.unlogged = 0
            runs[key] = run
            return unlogged
        }
    }

    /// Ends the key's run of failures. Returns how many failures it had, `nil` when there was none.
    public func success(_ key: String = "") -> Int? {
        runs.withLock { $0.removeValue(forKey: key)?.failures }
    }
}
