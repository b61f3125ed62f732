/// The deadline of an outbound exchange passed before it ended.
public struct DeadlineExceeded: Error, Sendable {
    /// Creates the error.
    public init() {}
}

/// Runs `operation` and returns its result, or throws ``DeadlineExceeded`` once `timeout` has passed, cancelling it.
///
/// async-http-client's own deadline covers a request until its response head arrives; a peer that then sends its body
/// slowly, or not at all, would hold the caller for ever. Every outbound exchange (Apple's endpoints, webhook
/// receivers) runs its whole request and body read under this one deadline instead. Cancelling a body read makes the
/// client close that connection.
///
/// The caller is answered at the deadline whatever the operation does then (``FirstOutcome``): it is cancelled, and
/// left to end by itself. Not a task group, which waits for every child at its end: an exchange that did not end on
/// its cancellation would hold the caller, and the request waiting on Apple, for good.
///
/// - Parameters:
///   - timeout: How long the whole operation may take.
///   - operation: The exchange; it should stop promptly when cancelled.
public func withDeadline<Value: Sendable>(
    _ timeout: Duration,
    _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    let outcome = FirstOutcome<Value>()
    let work = Task {
        do {
            outcome.settle(.success(try await operation()))
        } catch {
            outcome.settle(.failure(error))
        }
    }
    let timer = Task {
        guard (try? await Task.sleep(for: timeout)) != nil else { return }
        outcome.settle(.failure(DeadlineExceeded()))
        work.cancel()
    }
    defer { timer.cancel() }
    return try await withTaskCancellationHandler {
        try await outcome.value()
    } onCancel: {
        outcome.settle(.failure(CancellationError()))
        work.cancel()
    }
}
