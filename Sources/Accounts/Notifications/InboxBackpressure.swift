import Metrics
import Synchronization

/// Holds Apple's notification endpoint back while the notifications this process stored are more than processing has
/// cleared by ``room``, so that a burst cannot outrun processing: the inbox stays short enough for a notification's
/// processing to start within about a second of its `200`, as the contract has it, and a burst's inbox empties soon
/// after the burst ends (`Benchmarks/run --start-postgres`, "PG ingest", guards this).
///
/// A held notification is verified but not yet stored; it waits for a processing pass to finish, or for at most
/// ``longestWait``, and is then stored and answered as any other: Orchard never refuses a notification for load. Only
/// this process's stores count; a claim that finds fewer than a batch (another replica took the rest, or the inbox is
/// empty) resets the count to what that claim took.
final class InboxBackpressure: Sendable {
    /// Notifications stored and not yet cleared by processing before the endpoint holds the next one back.
    let room: Int
    /// The longest one notification is held back.
    let longestWait: Duration

    private struct Waiter {
        var continuation: CheckedContinuation<Void, Never>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var outstanding = 0
        var nextWaiter = 0
        var waiters: [Int: Waiter] = [:]
    }

    private let state = Mutex(State())
    private let held: Gauge

    /// Creates the gate; `room` is at least one.
    init(room: Int, longestWait: Duration, metrics: any MetricsFactory) {
        self.room = max(1, room)
        self.longestWait = longestWait
        self.held = Gauge(label: "orchard_notifications_held", factory: metrics)
    }

    /// Returns when there is room, or after ``longestWait``.
    func admit() async {
        guard state.withLock({ $0.outstanding >= room }) else { return }
        await withCheckedContinuation { continuation in
            let id: Int? = state.withLock { state in
                guard state.outstanding >= room else { return nil }
                state.nextWaiter += 1
                state.waiters[state.nextWaiter] = Waiter(continuation: continuation)
                held.record(state.waiters.count)
                return state.nextWaiter
            }
            guard let id else { return continuation.resume() }
            let timer = Task { [longestWait] in
                try? await Task.sleep(for: longestWait)
                if !Task.isCancelled { self.timeOut(id) }
            }
            let released = state.withLock { state in
                guard state.waiters[id] != nil else { return true }
                state.waiters[id]?.timer = timer
                return false
            }
            if released { timer.cancel() }
        }
    }

    /// One notification stored by this process.
    func stored() {
        state.withLock { $0.outstanding += 1 }
    }

    /// A processing claim took `claimed` notifications of at most `limit`: fewer means no more were due.
    func claimed(_ claimed: Int, limit: Int) {
        guard claimed < limit else { return }
        state.withLock { $0.outstanding = min($0.outstanding, claimed) }
        releaseIfRoom()
    }

    /// Processing finished `count` notifications.
    func processed(_ count: Int) {
        state.withLock { $0.outstanding = max(0, $0.outstanding - count) }
        releaseIfRoom()
    }

    /// Resumes every waiter when there is room.
    private func releaseIfRoom() {
        let released = state.withLock { state -> [Waiter] in
            guard state.outstanding < room, !state.waiters.isEmpty else { return [] }
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        resume(released, stillHeld: 0)
    }

    /// Resumes one waiter whose ``longestWait`` is over.
    private func timeOut(_ id: Int) {
        let (released, stillHeld) = state.withLock { state in
            (state.waiters.removeValue(forKey: id).map { [$0] } ?? [], state.waiters.count)
        }
        resume(released, stillHeld: stillHeld)
    }

    private func resume(_ waiters: [Waiter], stillHeld: Int) {
        guard !waiters.isEmpty else { return }
        held.record(stillHeld)
        for waiter in waiters {
            waiter.timer?.cancel()
            waiter.continuation.resume()
        }
    }
}
