public import Foundation

/// What became of one claimed job; its handler's store writes it back with the rest of the batch.
///
/// `Done` carries what a finished job leaves behind when there is something (a validation's new access token and next
/// due time); most kinds use `Void`.
public enum JobOutcome<Done: Sendable>: Sendable {
    /// Finished: the job is not tried again.
    case done(Done)
    /// Not finished: released (lease cleared, one more attempt counted) to be tried again at `at`.
    case retry(at: Date, error: String)
    /// Given up for good (a webhook after its retry window); the row stays for operators.
    case failed(error: String)

    /// The outcome's label in `orchard_jobs_total`: `done`, `retry` or `failed`.
    public var label: String {
        switch self {
        case .done: "done"
        case .retry: "retry"
        case .failed: "failed"
        }
    }

    /// Whether the job finished (whatever it left to record).
    public var isDone: Bool {
        if case .done = self { return true }
        return false
    }
}

extension JobOutcome where Done == Void {
    /// Finished, with nothing to record beyond that.
    public static var done: Self { .done(()) }
}

/// A claimed job with its outcome, as the engine hands a batch of them to the handler's store.
public struct JobResult<Job: Sendable, Done: Sendable>: Sendable {
    /// The job as it was claimed.
    public var job: Job
    /// What became of it.
    public var outcome: JobOutcome<Done>

    /// Pairs a job with its outcome.
    public init(job: Job, outcome: JobOutcome<Done>) {
        self.job = job
        self.outcome = outcome
    }
}
