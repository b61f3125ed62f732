/// The time the session memory and the replicas' protocol count with: entry lifetimes, marks, leases, warm-ups and
/// waits. Injected, so that tests drive it instead of sleeping through a lease; `serve` uses ``SystemMonotonicClock``.
public protocol MonotonicClock: Sendable {
    /// The time since an arbitrary origin, the same for every caller of this clock; it never goes back.
    var now: Duration { get }
    /// Suspends until ``now`` has reached `deadline`; throws `CancellationError` when the task is cancelled first.
    func sleep(until deadline: Duration) async throws
}

extension MonotonicClock {
    /// Suspends for `duration` of this clock's time.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }
}

/// The system's monotonic clock (`ContinuousClock`), counted from the process's first use of it.
public struct SystemMonotonicClock: MonotonicClock {
    private static let origin = ContinuousClock.now

    /// The clock.
    public init() {
        _ = Self.origin
    }

    /// The time since the origin.
    public var now: Duration { ContinuousClock.now - Self.origin }

    /// Sleeps on the continuous clock.
    public func sleep(until deadline: Duration) async throws {
        try await ContinuousClock().sleep(until: Self.origin + deadline)
    }
}
