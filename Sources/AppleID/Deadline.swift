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
/// - Parameters:
///   - timeout: How long the whole operation may take.
///   - operation: The exchange; it must stop promptly when cancelled.
public func withDeadline<Value: Sendable>(
    _ timeout: Duration,
    _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    try await withThrowingTaskGroup(of: Value?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw DeadlineExceeded() }
        return value
    }
}
