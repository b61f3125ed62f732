import Synchronization

/// The first of several outcomes of one operation (its work's result, or its deadline's error), for a caller that must
/// be answered by the deadline whether or not the work then honours its cancellation: a lease, a query or an outbound
/// exchange that ignored it would otherwise hold the caller, and the request it serves, for good. What comes later is
/// dropped.
package final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var result: Result<T, any Error>?
        var waiter: CheckedContinuation<T, any Error>?
    }

    private let state = Mutex(State())

    /// An outcome not settled yet.
    package init() {}

    /// Settles the outcome, unless it is settled already.
    package func settle(_ result: Result<T, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }

    /// The outcome, once settled.
    package func value() async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let settled = state.withLock { state -> Result<T, any Error>? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let settled { continuation.resume(with: settled) }
        }
    }
}
