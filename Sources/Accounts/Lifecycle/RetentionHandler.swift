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

    /// The time before which a row of this target is removed, at `now`.
    public func cutoff(at now: Date) -> Date {
        switch self {
        case .nonces, .webFlowStates: now
        case .processedNotifications: now.addingTimeInterval(-30 * 86_400)
        case .deliveredWebhooks, .endedSessions, .expiredSessions: now.addingTimeInterval(-7 * 86_400)
        }
    }
}

/// The storage the retention job needs: which targets have rows past their cutoff, and removing a bounded number.
public protocol RetentionStore: Sendable {
    /// The targets that have at least one row older than their cutoff at `now` (one indexed probe each).
    func retentionTargetsDue(at now: Date) async throws -> [RetentionTarget]
    /// Removes up to `limit` rows of `target` older than its cutoff at `now`; returns how many.
    func purge(_ target: RetentionTarget, at now: Date, limit: Int) async throws -> Int
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

    /// The kind.
    public var kind: JobKind { .retention }
    /// Every target in one pass.
    public var batchSize: Int { RetentionTarget.allCases.count }
    /// One target at a time: they share the one writer anyway.
    public var concurrency: Int { 1 }
    /// Rows removed per transaction.
    public static let rowsPerTransaction = 1_000

    /// Creates the handler over its store and the clock that says what has expired.
    public init(store: any RetentionStore, clock: any WallClock) {
        self.store = store
        self.clock = clock
    }

    /// The targets with rows past their cutoff.
    public func claim(now: Date, leaseUntil: Date, limit: Int, logger: Logger) async throws -> [RetentionTarget] {
        Array(try await store.retentionTargetsDue(at: now).prefix(limit))
    }

    /// Removes every row of the target past its cutoff, a transaction of at most ``rowsPerTransaction`` at a time.
    public func perform(_ target: RetentionTarget, logger: Logger) async throws -> JobOutcome<Int> {
        let now = clock.now()
        var removed = 0
        while true {
            let batch = try await store.purge(target, at: now, limit: Self.rowsPerTransaction)
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
