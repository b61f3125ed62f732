public import AppleID
import Foundation
public import Logging
public import Metrics
import Tracing

/// Runs any ``JobHandler``: claim → lease → perform → complete-or-reschedule, once, for every kind.
///
/// A pass claims a batch in one statement (leased for the handler's ``JobHandler/leaseDuration``), performs the jobs (at most the handler's
/// ``JobHandler/concurrency`` at once) and writes every outcome back in one batch. Claims read only due rows, so a pass
/// costs the same however many rows are not due. Each outcome is counted in `orchard_jobs_total` (by `kind` and
/// `outcome`), and each pass in `orchard_job_passes_total` (by `kind` and `result`: `claimed`, `idle`,
/// `claim_failed`), which shows that a kind's worker is alive; the kinds' own counters are the handlers'. The loop that runs passes (at start-up, on wake-ups, every
/// second) is the server's `JobService`.
///
/// A claim that fails (the database is down, say) is tried again on the next pass. It is logged as a warning at most
/// once per ``claimFailureLogInterval`` and kind, with the count of failed passes left unlogged, and the first claim
/// after a logged failure is logged at info (see ``FailureLogSpacing``): during an outage every kind fails each second,
/// and a line per kind per second would flood the log.
public struct JobEngine: Sendable {
    /// Where claims take `now` and outcomes their time from.
    let clock: any WallClock
    /// Where `orchard_jobs_total` goes.
    let metrics: any MetricsFactory
    /// Spaces the lines about failed claims, by kind.
    let claimFailures: FailureLogSpacing

    /// The shortest time between two lines about one kind's failed claims.
    public static let claimFailureLogInterval: Duration = .seconds(10)

    /// Creates the engine; `metrics` defaults to the process's factory.
    public init(clock: any WallClock, metrics: any MetricsFactory = MetricsSystem.factory) {
        self.clock = clock
        self.metrics = metrics
        self.claimFailures = FailureLogSpacing(clock: clock, interval: Self.claimFailureLogInterval)
    }

    /// One pass of a handler: claims up to `limit` due jobs (the handler's batch size by default), performs them and
    /// records the outcomes. Returns how many it claimed.
    @discardableResult
    public func runPass<Handler: JobHandler>(_ handler: Handler, limit: Int? = nil, logger: Logger) async -> Int {
        let now = clock.now()
        let jobs: [Handler.Job]
        do {
            jobs = try await handler.claim(
                now: now,
                leaseUntil: now.addingTimeInterval(handler.leaseDuration.seconds),
                limit: limit ?? handler.batchSize,
                logger: logger
            )
        } catch {
            if let unlogged = claimFailures.failure(handler.kind.name) {
                logger.warning(
                    "cannot claim jobs",
                    metadata: ["job.kind": "\(handler.kind)", "error": "\(error)", "job.unlogged_failures": "\(unlogged)"]
                )
            }
            countPass(handler.kind, "claim_failed")
            return 0
        }
        if let failures = claimFailures.success(handler.kind.name) {
            logger.info("claiming jobs again", metadata: ["job.kind": "\(handler.kind)", "job.failed_passes": "\(failures)"])
        }
        if !jobs.isEmpty {
            // A span per pass that claimed something (an idle tick makes none), the jobs' spans inside it.
            await withSpan("job pass \(handler.kind.name)") { span in
                span.attributes["job.kind"] = handler.kind.name
                span.attributes["job.count"] = jobs.count
                await run(claimed: jobs, with: handler, logger: logger)
            }
        }
        countPass(handler.kind, jobs.isEmpty ? "idle" : "claimed")
        return jobs.count
    }

    /// Counts a finished pass of `kind` in `orchard_job_passes_total`.
    private func countPass(_ kind: JobKind, _ result: String) {
        Counter(label: "orchard_job_passes_total", dimensions: [("kind", kind.name), ("result", result)], factory: metrics).increment()
    }

    /// Performs jobs already claimed (by ``runPass(_:limit:logger:)``, or by a request that wrote its own job with a
    /// lease, as a deletion does with its revocation) and records their outcomes in one batch.
    ///
    /// Returns each job's outcome as performed, in the jobs' order; `nil` for a job whose handler threw (left to its
    /// lease). When the batch cannot be recorded, that is logged and its jobs keep their leases.
    @discardableResult
    public func run<Handler: JobHandler>(
        claimed jobs: [Handler.Job],
        with handler: Handler,
        logger: Logger
    ) async -> [JobOutcome<Handler.Done>?] {
        let outcomes = await perform(jobs, with: handler, logger: logger)
        let results = zip(jobs, outcomes).compactMap { job, outcome in outcome.map { JobResult(job: job, outcome: $0) } }
        guard !results.isEmpty else { return outcomes }
        do {
            try await handler.complete(results, at: clock.now())
        } catch {
            logger.error(
                "cannot record the outcomes of a batch; its jobs keep their leases and will be tried again",
                metadata: ["job.kind": "\(handler.kind)", "job.count": "\(results.count)", "error": "\(error)"]
            )
            return outcomes
        }
        for result in results {
            Counter(label: "orchard_jobs_total", dimensions: [("kind", handler.kind.name), ("outcome", result.outcome.label)], factory: metrics)
                .increment()
        }
        return outcomes
    }

    /// Performs the jobs: those the handler performs together, then the others, at most the handler's concurrency at
    /// once; outcomes in the jobs' order.
    private func perform<Handler: JobHandler>(
        _ jobs: [Handler.Job],
        with handler: Handler,
        logger: Logger
    ) async -> [JobOutcome<Handler.Done>?] {
        var outcomes = await handler.performTogether(jobs, logger: logger)
        let rest = outcomes.indices.filter { outcomes[$0] == nil }
        guard !rest.isEmpty else { return outcomes }
        let performed = await performEach(rest.map { jobs[$0] }, with: handler, logger: logger)
        for (index, outcome) in zip(rest, performed) { outcomes[index] = outcome }
        return outcomes
    }

    /// Performs the jobs one by one, at most the handler's concurrency at once; outcomes in the jobs' order.
    private func performEach<Handler: JobHandler>(
        _ jobs: [Handler.Job],
        with handler: Handler,
        logger: Logger
    ) async -> [JobOutcome<Handler.Done>?] {
        let width = max(1, handler.concurrency)
        // Chains of job indexes: the jobs that share an ordering key, in claim order; every other job alone.
        var chains: [[Int]] = []
        var chainOfKey: [String: Int] = [:]
        for (index, job) in jobs.enumerated() {
            if let key = handler.orderingKey(for: job) {
                if let chain = chainOfKey[key] {
                    chains[chain].append(index)
                    continue
                }
                chainOfKey[key] = chains.count
            }
            chains.append([index])
        }
        guard width > 1, chains.count > 1 else {
            var outcomes: [JobOutcome<Handler.Done>?] = []
            for job in jobs {
                outcomes.append(await attempt(job, with: handler, logger: logger))
            }
            return outcomes
        }
        return await withTaskGroup(of: [(Int, JobOutcome<Handler.Done>?)].self) { group in
            var outcomes = [JobOutcome<Handler.Done>?](repeating: nil, count: jobs.count)
            for (started, chain) in chains.enumerated() {
                if started >= width, let finished = await group.next() {
                    for (index, outcome) in finished { outcomes[index] = outcome }
                }
                group.addTask {
                    var results: [(Int, JobOutcome<Handler.Done>?)] = []
                    for index in chain {
                        results.append((index, await self.attempt(jobs[index], with: handler, logger: logger)))
                    }
                    return results
                }
            }
            for await finished in group {
                for (index, outcome) in finished { outcomes[index] = outcome }
            }
            return outcomes
        }
    }

    private func attempt<Handler: JobHandler>(_ job: Handler.Job, with handler: Handler, logger: Logger) async -> JobOutcome<Handler.Done>? {
        do {
            // A span per job, current while it runs, so its calls to Apple or to a receiver are its children.
            return try await withSpan("job \(handler.kind.name)") { span in
                span.attributes["job.kind"] = handler.kind.name
                let outcome = try await handler.perform(job, logger: logger)
                span.attributes["job.outcome"] = outcome.label
                return outcome
            }
        } catch {
            var metadata = handler.metadata(for: job)
            metadata["job.kind"] = "\(handler.kind)"
            metadata["error"] = "\(error)"
            logger.error("a job failed without an outcome; it is tried again when its lease runs out", metadata: metadata)
            return nil
        }
    }
}
