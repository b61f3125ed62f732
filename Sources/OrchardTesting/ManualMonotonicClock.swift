public import Storage
import Synchronization

/// A ``Storage/MonotonicClock`` that moves only when a test moves it: leases, marks and waits of the session memory
/// are driven, never slept through. A sleeper wakes when ``advance(by:)`` reaches its deadline, or when its task is
/// cancelled.
public final class ManualMonotonicClock: MonotonicClock {
    private struct Sleeper {
        let deadline: Duration
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Duration = .seconds(1_000)
        var sleepers: [Int: Sleeper] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    /// A clock at an arbitrary instant.
    public init() {}

    /// The current instant.
    public var now: Duration { state.withLock { $0.now } }

    /// How many tasks sleep on it now.
    public var sleeping: Int { state.withLock { $0.sleepers.count } }

    /// Moves the clock on by `duration` and wakes every sleeper whose deadline it reached.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now += duration
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for key in due.keys { state.sleepers[key] = nil }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Suspends until ``advance(by:)`` reaches `deadline`.
    public func sleep(until deadline: Duration) async throws {
        let id = state.withLock { state -> Int in
            defer { state.next += 1 }
            return state.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    guard deadline > state.now, !Task.isCancelled else { return true }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }
}
