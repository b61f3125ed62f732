public import AppleID
public import Foundation
public import Logging

extension JobKind {
    /// Removing what has outlived its purpose: spent nonces and web-flow states, old inbox records, delivered webhooks,
    /// sessions a week after they ended.
    public static let retention = JobKind("retention")
}

/// What the retention job removes, and from when on.
public enum RetentionTarget: String, Sendable, CaseIterable {
    /// Issued nonces, used or not, once their lifetime ended.
    case nonces
    /// Web-flow states, used or not, once their lifetime ended.
    case webFlowStates = "web_flow_states"
    /// Processed notifications' records, 30 days after processing.
    case processedNotifications = "processed_notifications"
    /// Delivered webhook rows, 7 days after delivery (failed ones stay for operators).
    case deliveredWebhooks = "delivered_webhooks"
    /// Sessions, 7 days after they ended (their `session_revoked` reason is promised for those days).
    case endedSessions = "ended_sessions"
    /// Sessions, 7 days after they expired.
    case expiredSessions = "expired_sessions"
    /// Not a removal: each session that expired since the last run gets its `signed_out` (`expired`) history event.
    case sessionExpiries = "session_expiries"
    /// History events older than `ORCHARD_HISTORY_RETENTION`.
    case history
    /// Console logins, once their 12 hours ended.
    case consoleLogins = "console_logins"
    /// Deletions that left the revocation to the user (`manual_required`), 30 days after, when operators no longer
    /// need to see them.
    case manualRevocations = "manual_revocations"
}

/// The storage the retention job needs: which targets have rows past their cutoff, and removing a bounded number.
public protocol RetentionStore: Sendable {
    /// The targets that have at least one row older than their cutoff (one indexed probe each).
    func retentionTargetsDue(cutoffs: [RetentionTarget: Date]) async throws -> [RetentionTarget]
    /// Removes up to `limit` rows of `target` older than `cutoff`; returns how many.
    func purge(_ target: RetentionTarget, before cutoff: Date, limit: Int) async throws -> Int
}

/// Keeps storage bounded whatever anonymous clients do: every second, each target with rows past its cutoff loses them
/// all, 1,000 to a transaction (so writers interleave), until none past the cutoff is left; removal keeps pace with
/// any rate rows can be made at. The probes read only the ends of the expiry indexes, so an idle tick costs one index
/// seek per target. Deleting is idempotent, so replicas running it side by side need no lease.
public struct RetentionHandler: JobHandler {
    public typealias Job = RetentionTarget
    public typealias Done = Int

    let store: any RetentionStore
    let clock: any WallClock
    let windows: RetentionWindows

    /// The kind.
    public var kind: JobKind { .retention }
    /// Every target in one pass.
    public var batchSize: Int { RetentionTarget.allCases.count }
    /// One target at a time: they share the one writer anyway.
    public var concurrency: Int { 1 }
    /// Rows removed per transaction.
    public static let rowsPerTransaction = 1_000

    /// Creates the handler over its store, the clock that says what has expired and how long records are kept.
    public init(store: any RetentionStore, clock: any WallClock, windows: RetentionWindows = RetentionWindows()) {
        self.store = store
        self.clock = clock
        self.windows = windows
    }

    /// The targets with rows past their cutoff.
    public func claim(now: Date, leaseUntil: Date, limit: Int, logger: Logger) async throws -> [RetentionTarget] {
        let cutoffs = Dictionary(uniqueKeysWithValues: RetentionTarget.allCases.map { ($0, windows.cutoff($0, at: now)) })
        return Array(try await store.retentionTargetsDue(cutoffs: cutoffs).prefix(limit))
    }

    /// Removes every row of the target past its cutoff, a transaction of at most ``rowsPerTransaction`` at a time.
    public func perform(_ target: RetentionTarget, logger: Logger) async throws -> JobOutcome<Int> {
        let cutoff = windows.cutoff(target, at: clock.now())
        var removed = 0
        while true {
            let batch = try await store.purge(target, before: cutoff, limit: Self.rowsPerTransaction)
            removed += batch
            if batch < Self.rowsPerTransaction { return .done(removed) }
        }
    }

    /// Nothing to record: a removed row is its own record.
    public func complete(_ results: [JobResult<RetentionTarget, Int>], at now: Date) async throws {}

    /// The target's name.
    public func metadata(for target: RetentionTarget) -> Logger.Metadata {
        ["retention.target": "\(target.rawValue)"]
    }
}
