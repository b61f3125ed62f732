/// Failures queued for Apple's endpoints by the control API, each for a number of calls.
struct EmulatorFailureQueue: Sendable {
    private struct Pending: Sendable {
        var failure: EmulatorFailure
        var remaining: Int
    }

    private var queues: [EmulatorEndpoint: [Pending]] = [:]

    /// Queues `failure` for the next `count` calls to `endpoint`, after any failures already queued there.
    mutating func inject(_ failure: EmulatorFailure, into endpoint: EmulatorEndpoint, count: Int) {
        guard count > 0 else { return }
        queues[endpoint, default: []].append(Pending(failure: failure, remaining: count))
    }

    /// Forgets every queued failure.
    mutating func clear() {
        queues = [:]
    }

    /// Takes the failure due for this call to `endpoint`, if any.
    mutating func take(for endpoint: EmulatorEndpoint) -> EmulatorFailure? {
        guard var queue = queues[endpoint], !queue.isEmpty else { return nil }
        let failure = queue[0].failure
        queue[0].remaining -= 1
        if queue[0].remaining == 0 {
            queue.removeFirst()
        }
        queues[endpoint] = queue
        return failure
    }
}
