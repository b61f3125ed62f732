public import Foundation
public import Logging

/// One kind of background job, as the ``JobEngine`` runs it: claim a batch of due rows under a lease, perform each,
/// write the outcomes back in one batch.
///
/// A handler only says how its kind is claimed, done and recorded; leases, batching, concurrency limits, wake-ups, the
/// 1-second tick and shutdown are the engine's and the server's `JobService`'s. A new kind is one handler (plus the SQL
/// its store needs) registered in the composition root.
public protocol JobHandler: Sendable {
    /// The claimed work item.
    associatedtype Job: Sendable
    /// What a finished job leaves to be recorded (`Void` for most kinds).
    associatedtype Done: Sendable = Void

    /// The kind: its wake-up channel and its name in logs and metrics.
    var kind: JobKind { get }
    /// How many jobs one pass claims; a pass that claims a full batch is followed by another at once.
    var batchSize: Int { get }
    /// How many jobs of a batch run at once (1: one after the other, in claim order).
    var concurrency: Int { get }

    /// Claims up to `limit` jobs due at `now` that nobody holds, leasing them until `leaseUntil`, in one statement.
    func claim(now: Date, leaseUntil: Date, limit: Int, logger: Logger) async throws -> [Job]
    /// Performs what it can of a claimed batch together (in fewer statements than one by one); the others, `nil`, are
    /// performed one by one. Outcomes in the jobs' order. By default, none.
    func performTogether(_ jobs: [Job], logger: Logger) async -> [JobOutcome<Done>?]
    /// Performs one claimed job.
    ///
    /// Throwing leaves the job to its lease: nothing is written back, and the job is claimed again once the lease runs
    /// out (the choice for faults a retry with backoff would not cure, such as a value the vault cannot open).
    func perform(_ job: Job, logger: Logger) async throws -> JobOutcome<Done>
    /// Writes back the outcomes of one batch, in one transaction.
    func complete(_ results: [JobResult<Job, Done>], at now: Date) async throws
    /// Log metadata that identifies a job without any secret (`revocation.id`, `webhook.id`, ...).
    func metadata(for job: Job) -> Logger.Metadata
    /// Jobs of one batch with the same key run one after the other, in claim order; jobs with different keys (or none)
    /// run concurrently, up to ``concurrency``. `nil` by default.
    func orderingKey(for job: Job) -> String?
    /// How many passes may run at once (1 by default: a pass starts when the previous one ended). More lets jobs
    /// that became due meanwhile start while a slow job of an earlier pass is still waiting on its peer; only for
    /// kinds whose jobs need no order between passes.
    var passesInFlight: Int { get }
    /// How long a claimed job of this kind belongs to its holder: its attempt's deadline plus 5 seconds, so that the jobs
    /// of a replica that died are taken over within seconds (the contract's "Leases"). Every job of a batch must start
    /// its attempt when claimed, so kinds that call out keep ``concurrency`` at ``batchSize``.
    var leaseDuration: Duration { get }
}

extension JobHandler {
    /// Every job one by one.
    public func performTogether(_ jobs: [Job], logger: Logger) async -> [JobOutcome<Done>?] {
        Array(repeating: nil, count: jobs.count)
    }
    /// No ordering between the jobs of a batch beyond ``concurrency``.
    public func orderingKey(for job: Job) -> String? { nil }
    /// One pass at a time.
    public var passesInFlight: Int { 1 }
    /// 15 seconds: a 10-second deadline plus 5.
    public var leaseDuration: Duration { .seconds(15) }
}
