/// Every call to Apple's endpoints, in order of arrival, with the answer it was given.
struct EmulatorCallLog: Sendable {
    private(set) var calls: [EmulatorCall] = []
    private var nextSequence = 1

    /// Logs a call as it arrives; returns its sequence number, to complete it with ``complete(_:status:error:detail:)``.
    mutating func append(_ call: EmulatorCall) -> Int {
        var call = call
        call.sequence = nextSequence
        nextSequence += 1
        calls.append(call)
        return call.sequence
    }

    /// Records the answer given to a logged call.
    mutating func complete(_ sequence: Int, status: Int?, error: String?, detail: String?) {
        guard let index = calls.lastIndex(where: { $0.sequence == sequence }) else { return }
        calls[index].status = status
        calls[index].error = error
        calls[index].detail = detail
    }

    /// Empties the log.
    mutating func clear() {
        calls = []
    }
}
