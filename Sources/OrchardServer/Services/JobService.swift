public import Accounts
import AsyncAlgorithms
public import Logging
public import ServiceLifecycle
import Synchronization

/// Runs every registered job handler on the job engine, until graceful shutdown.
///
/// It describes itself by its kinds only: swift-service-lifecycle logs each service's description when a group starts,
/// and the handlers hold what must never reach a log (a webhook URL's credentials, the vault).
///
/// Each handler gets its own loop: a pass at start-up, whenever a request wakes its kind, and at least every second; a
/// pass that claimed a full batch is followed by another at once. Graceful shutdown ends the loops between passes: a
/// pass under way finishes its batch and records the outcomes, so no job is left to wait for its lease.
public struct JobService: Service, CustomStringConvertible {
    /// The engine every pass runs on.
    let engine: JobEngine
    /// One handler per kind.
    let handlers: [any JobHandler]
    /// The wake-ups requests send, one stream per kind.
    let wakeups: JobWakeups
    /// The logger; each loop adds `worker` (the kind).
    let logger: Logger
    /// How often each loop looks for due work besides wake-ups (``OrchardDependencies/jobTick``).
    let tick: Duration

    /// Creates the service over the engine, the handlers (one per kind), the wake-ups requests send and the tick.
    public init(engine: JobEngine, handlers: [any JobHandler], wakeups: JobWakeups, tick: Duration = .seconds(1), logger: Logger) {
        self.engine = engine
        self.handlers = handlers
        self.wakeups = wakeups
        self.tick = tick
        self.logger = logger
    }

    /// `JobService(revocation, notification, …)`: its kinds, nothing they hold.
    public var description: String { "JobService(\(handlers.map { "\($0.kind)" }.joined(separator: ", ")))" }

    /// Drains each kind once, one kind after the other, as the loops would on a tick: passes until one claims less than
    /// a full batch (only `kinds`, when given). Returns how many jobs each kind claimed. For tests that drive the jobs
    /// instead of a tick.
    public func runPasses(only kinds: Set<JobKind>? = nil) async -> [JobKind: Int] {
        var claimed: [JobKind: Int] = [:]
        for handler in handlers where kinds?.contains(handler.kind) ?? true {
            var logger = self.logger
            logger[metadataKey: "worker"] = "\(handler.kind)"
            claimed[handler.kind] = await drain(handler, logger: logger)
        }
        return claimed
    }

    /// Runs every handler's loop until graceful shutdown (or cancellation).
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            for handler in handlers {
                group.addTask { await self.loop(handler) }
            }
        }
    }

    /// Passes until one claims less than a full batch, or graceful shutdown begins; returns how many jobs they claimed.
    @discardableResult
    private func drain(_ handler: some JobHandler, logger: Logger) async -> Int {
        var total = 0
        while true {
            let claimed = await engine.runPass(handler, logger: logger)
            total += claimed
            guard claimed >= handler.batchSize, !Task.isShuttingDownGracefully, !Task.isCancelled else { return total }
        }
    }

    /// One handler's loop: a pass at start-up, on each wake-up and on each tick (ServiceLifecycle's
    /// `AsyncTimerSequence`, ended by graceful shutdown). Graceful shutdown stops new passes; passes under way finish
    /// their batch and record its outcomes before the loop returns (they are not cancelled).
    private func loop(_ handler: some JobHandler) async {
        var logger = self.logger
        logger[metadataKey: "worker"] = "\(handler.kind)"
        let passLogger = logger
        let (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let wakeups = self.wakeups.stream(handler.kind)
        // The outer group holds the passes and waits for them; the inner one feeds the signals and is cancelled.
        await withDiscardingTaskGroup { passes in
            await withDiscardingTaskGroup { feeders in
                feeders.addTask {
                    signal.yield()
                    for await _ in AsyncTimerSequence(interval: tick, clock: .continuous).cancelOnGracefulShutdown() {
                        signal.yield()
                    }
                }
                feeders.addTask {
                    for await _ in wakeups {
                        signal.yield()
                    }
                }
                let inFlight = PassCount()
                for await _ in signals.cancelOnGracefulShutdown() {
                    guard handler.passesInFlight > 1 else {
                        await drain(handler, logger: passLogger)
                        continue
                    }
                    // Overlapping passes: start one unless the limit runs. A signal that found every pass busy is
                    // remembered, and the first pass to end then signals, so due work that arrived meanwhile is
                    // claimed. (A pass that always signalled at its end would start the next one at once, forever:
                    // an idle server claiming nothing in a tight loop.)
                    let started = inFlight.state.withLock { state in
                        guard state.running < handler.passesInFlight else {
                            state.missed = true
                            return false
                        }
                        state.running += 1
                        return true
                    }
                    guard started else { continue }
                    passes.addTask {
                        await drain(handler, logger: passLogger)
                        let missed = inFlight.state.withLock { state in
                            state.running -= 1
                            defer { state.missed = false }
                            return state.missed
                        }
                        if missed { signal.yield() }
                    }
                }
                feeders.cancelAll()
            }
        }
    }
}

/// How many passes of one kind run at once, and whether a signal came while all of them were busy.
private final class PassCount: Sendable {
    struct State {
        var running = 0
        var missed = false
    }
    let state = Mutex(State())
}
