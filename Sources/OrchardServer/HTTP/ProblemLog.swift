import Accounts
public import AppleID
import Foundation
public import Logging

/// Logs what a problem answer leaves out: the reason behind an internal error, every time, and the reason behind a
/// storage outage, at most once per ``interval``.
///
/// A `storage_unavailable` answer tells the client only that the database cannot be used; which engine failed and how
/// (an SQLite result code, a PostgreSQL error code, a connection pool's message) is an internal matter and goes to the
/// log instead. During an outage every request fails the same way, so one line per request would flood the log: the
/// first failure is logged at once, and then one line per interval, saying how many failures went unlogged since.
public final class ProblemLog: Sendable {
    /// The shortest time between two lines about storage outages.
    public var interval: Duration { outages.interval }
    private let outages: FailureLogSpacing

    /// Creates the log.
    /// - Parameters:
    ///   - clock: The clock that spaces the outage lines.
    ///   - interval: The shortest time between two lines about storage outages (10 seconds by default).
    public init(clock: any WallClock, interval: Duration = .seconds(10)) {
        self.outages = FailureLogSpacing(clock: clock, interval: interval)
    }

    /// Logs the problem's reason when it has one to log (see the type's documentation).
    public func record(_ problem: OrchardProblem, logger: Logger) {
        guard let reason = problem.logReason else { return }
        guard problem.code == .lifecycle(.storageUnavailable) else {
            logger.error("internal error", metadata: ["error.reason": "\(reason)"])
            return
        }
        guard let unlogged = outages.failure() else { return }
        logger.warning(
            "storage unavailable: requests are answered 503",
            metadata: ["error.reason": "\(reason)", "storage.unlogged_failures": "\(unlogged)"]
        )
    }
}
