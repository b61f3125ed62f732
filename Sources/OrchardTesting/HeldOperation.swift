import Synchronization

/// Holds an operation, deaf to its cancellation, until the test opens it: the stand-in for an exchange or a statement
/// that does not end when it is cancelled.
public final class HeldOperation: Sendable {
    private let state = Mutex<(open: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    /// Creates a closed one.
    public init() {}

    /// Returns once the test opens it, cancelled or not.
    public func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state in
                if !state.open { state.waiter = continuation }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    /// Lets the operation, and any that waits later, go on.
    public func open() {
        let waiter = state.withLock { state in
            state.open = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
}
