import Accounts
import AppleID
import Foundation
import InMemoryLogging
import Logging
import OrchardTesting
import Synchronization
import Testing

/// A job kind held in memory: jobs are numbers, due from the start; the handler records what the engine asks of it.
final class CountingHandler: JobHandler, Sendable {
    struct State {
        var due: [Int]
        var leases: [Date] = []
        var limits: [Int] = []
        var running = 0
        var started = 0
        var mostAtOnce = 0
        var performed: [Int] = []
        var completions: [[(job: Int, outcome: String)]] = []
    }

    let kind = JobKind("counting")
    let batchSize: Int
    let concurrency: Int
    let state: Mutex<State>
    /// Jobs whose `perform` throws.
    let throwing: Set<Int>
    /// When set, jobs with the same remainder modulo this share an ordering key.
    let orderingModulus: Int?
    /// When set, each job waits (at most 5 s) until this many run at once, or every job has started, before it goes on:
    /// whether the engine runs them side by side is then not left to how busy the machine's threads are.
    let rendezvous: Int?
    /// How many jobs there are.
    let jobs: Int

    init(jobs: Int, batchSize: Int, concurrency: Int, throwing: Set<Int> = [], orderingModulus: Int? = nil, rendezvous: Int? = nil) {
        self.rendezvous = rendezvous
        self.jobs = jobs
        self.batchSize = batchSize
        self.concurrency = concurrency
        self.throwing = throwing
        self.orderingModulus = orderingModulus
        self.state = Mutex(State(due: Array(0..<jobs)))
    }

    func claim(now: Date, leaseUntil: Date, limit: Int, logger: Logger) async throws -> [Int] {
        state.withLock { state in
            state.leases.append(leaseUntil)
            state.limits.append(limit)
            let claimed = Array(state.due.prefix(limit))
            state.due.removeFirst(claimed.count)
            return claimed
        }
    }

    func perform(_ job: Int, logger: Logger) async throws -> JobOutcome<Void> {
        state.withLock { state in
            state.running += 1
            state.started += 1
            state.mostAtOnce = max(state.mostAtOnce, state.running)
        }
        if let rendezvous {
            let deadline = ContinuousClock.now + .seconds(5)
            while state.withLock({ $0.running < rendezvous && $0.started < jobs }), ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
        try? await Task.sleep(for: .milliseconds(job % 2 == 0 ? 40 : 15))
        state.withLock { state in
            state.running -= 1
            state.performed.append(job)
        }
        if throwing.contains(job) { throw CancellationError() }
        return job % 3 == 0 ? .retry(at: Date(timeIntervalSince1970: 0), error: "odd") : .done
    }

    func complete(_ results: [JobResult<Int, Void>], at now: Date) async throws {
        state.withLock { $0.completions.append(results.map { ($0.job, $0.outcome.label) }) }
    }

    func metadata(for job: Int) -> Logger.Metadata { ["job": "\(job)"] }

    func orderingKey(for job: Int) -> String? { orderingModulus.map { "\(job % $0)" } }
}

@Suite struct JobEngineTests {
    let clock = TestWallClock()
    var engine: JobEngine { JobEngine(clock: clock) }
    let logger = Logger(label: "test")

    @Test("a pass claims one batch under a lease and records every outcome in one batch, in claim order")
    func onePass() async {
        let handler = CountingHandler(jobs: 10, batchSize: 4, concurrency: 4)
        #expect(await engine.runPass(handler, logger: logger) == 4)
        let state = handler.state.withLock { $0 }
        #expect(state.limits == [4])
        // The handler's lease: a 10-second deadline plus 5 seconds, by default.
        #expect(state.leases == [clock.now().addingTimeInterval(15)])
        #expect(state.completions.count == 1)
        #expect(state.completions.first?.map(\.job) == [0, 1, 2, 3])
        #expect(state.completions.first?.map(\.outcome) == ["retry", "done", "done", "retry"])
        #expect(await engine.runPass(handler, limit: 100, logger: logger) == 6)
        #expect(await engine.runPass(handler, logger: logger) == 0)
        #expect(handler.state.withLock { $0.completions.count } == 2)
    }

    @Test("no more jobs of a batch run at once than the handler allows, and with one they run in claim order")
    func concurrencyLimit() async {
        let wide = CountingHandler(jobs: 12, batchSize: 12, concurrency: 3, rendezvous: 3)
        await engine.runPass(wide, logger: logger)
        let mostAtOnce = wide.state.withLock { $0.mostAtOnce }
        #expect(mostAtOnce == 3, "three at once when the handler allows three")
        #expect(Set(wide.state.withLock { $0.performed }) == Set(0..<12))

        let serial = CountingHandler(jobs: 6, batchSize: 6, concurrency: 1)
        await engine.runPass(serial, logger: logger)
        #expect(serial.state.withLock { $0.mostAtOnce } == 1)
        #expect(serial.state.withLock { $0.performed } == Array(0..<6))
    }

    @Test("a job whose handler throws is left to its lease: nothing is recorded for it")
    func thrownIsLeftToLease() async {
        let handler = CountingHandler(jobs: 3, batchSize: 3, concurrency: 3, throwing: [1])
        let outcomes = await engine.run(claimed: [0, 1, 2], with: handler, logger: logger)
        #expect(outcomes.map { $0?.label } == ["retry", nil, "done"])
        #expect(handler.state.withLock { $0.completions.first?.map(\.job) } == [0, 2])
    }

    @Test("jobs that share an ordering key run one after the other in claim order; other keys run beside them")
    func orderingKeys() async {
        let handler = CountingHandler(jobs: 12, batchSize: 12, concurrency: 12, orderingModulus: 3, rendezvous: 3)
        await engine.runPass(handler, logger: logger)
        let state = handler.state.withLock { $0 }
        #expect(state.mostAtOnce == 3, "three keys, so three chains at once")
        for key in 0..<3 {
            #expect(state.performed.filter { $0 % 3 == key } == Array(stride(from: key, to: 12, by: 3)))
        }
        #expect(state.completions.first?.map(\.job) == Array(0..<12))
    }

    @Test("failed claims are logged for the first pass, then at most once per interval per kind, and the recovery once")
    func claimFailuresAreSpaced() async {
        let memory = InMemoryLogHandler()
        let logger = Logger(label: "test.jobs") { _ in memory }
        let engine = JobEngine(clock: clock)
        let first = UnclaimableHandler(kind: JobKind("first"))
        let second = UnclaimableHandler(kind: JobKind("second"))
        func lines(_ message: String, _ kind: String) -> [InMemoryLogHandler.Entry] {
            memory.entries.filter { $0.message.description == message && $0.metadata["job.kind"] == .string(kind) }
        }

        for _ in 0..<5 { #expect(await engine.runPass(first, logger: logger) == 0) }
        #expect(lines("cannot claim jobs", "first").count == 1)
        #expect(lines("cannot claim jobs", "first").first?.level == .warning)
        #expect(lines("cannot claim jobs", "first").first?.metadata["error"] == "the database is down")
        #expect(lines("cannot claim jobs", "first").first?.metadata["job.unlogged_failures"] == "0")
        await engine.runPass(second, logger: logger)
        #expect(lines("cannot claim jobs", "second").count == 1, "one kind's failures do not silence another's")

        clock.advance(by: JobEngine.claimFailureLogInterval.seconds - 1)
        await engine.runPass(first, logger: logger)
        #expect(lines("cannot claim jobs", "first").count == 1, "within the interval")
        clock.advance(by: 1)
        await engine.runPass(first, logger: logger)
        #expect(lines("cannot claim jobs", "first").count == 2)
        #expect(lines("cannot claim jobs", "first").last?.metadata["job.unlogged_failures"] == "5")

        first.failing.withLock { $0 = false }
        await engine.runPass(first, logger: logger)
        await engine.runPass(first, logger: logger)
        #expect(lines("claiming jobs again", "first").count == 1)
        #expect(lines("claiming jobs again", "first").first?.level == .info)
        #expect(lines("claiming jobs again", "first").first?.metadata["job.failed_passes"] == "7")
        #expect(lines("claiming jobs again", "second").isEmpty)

        // A failure soon after is counted, not logged: a database that fails now and then makes at most one warning
        // per interval, and the recovery from a failure the log never mentioned is not logged either.
        first.failing.withLock { $0 = true }
        await engine.runPass(first, logger: logger)
        first.failing.withLock { $0 = false }
        await engine.runPass(first, logger: logger)
        #expect(lines("cannot claim jobs", "first").count == 2)
        #expect(lines("claiming jobs again", "first").count == 1)

        first.failing.withLock { $0 = true }
        clock.advance(by: JobEngine.claimFailureLogInterval.seconds)
        await engine.runPass(first, logger: logger)
        #expect(lines("cannot claim jobs", "first").count == 3)
        #expect(lines("cannot claim jobs", "first").last?.metadata["job.unlogged_failures"] == "1")
        first.failing.withLock { $0 = false }
        await engine.runPass(first, logger: logger)
        #expect(lines("claiming jobs again", "first").count == 2)
        #expect(lines("claiming jobs again", "first").last?.metadata["job.failed_passes"] == "1")
    }
}

/// A kind whose claims fail while ``failing`` is set, as when the database is down; it has no jobs otherwise.
final class UnclaimableHandler: JobHandler, Sendable {
    struct Unavailable: Error, CustomStringConvertible {
        var description: String { "the database is down" }
    }

    let kind: JobKind
    let batchSize = 4
    let concurrency = 1
    let failing = Mutex(true)

    init(kind: JobKind) {
        self.kind = kind
    }

    func claim(now: Date, leaseUntil: Date, limit: Int, logger: Logger) async throws -> [Int] {
        if failing.withLock({ $0 }) { throw Unavailable() }
        return []
    }

    func perform(_ job: Int, logger: Logger) async throws -> JobOutcome<Void> { .done }

    func complete(_ results: [JobResult<Int, Void>], at now: Date) async throws {}

    func metadata(for job: Int) -> Logger.Metadata { [:] }
}
