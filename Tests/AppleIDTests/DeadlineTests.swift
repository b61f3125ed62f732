import AppleID
import OrchardTesting
import Synchronization
import Testing

/// `withDeadline`, which bounds every outbound exchange (Apple's endpoints, webhook receivers) as a whole.
@Suite("One deadline for an outbound exchange")
struct DeadlineTests {
    /// Runs `withDeadline(timeout, operation)` in a task of its own and returns what it answered within 10 s (`nil`:
    /// no answer yet), so that a deadline that waits on its operation fails the test instead of hanging it.
    static func answer(
        within timeout: Duration,
        _ operation: @escaping @Sendable () async throws -> Int
    ) async -> (result: Result<Int, any Error>?, after: Duration) {
        let answered = Mutex<Result<Int, any Error>?>(nil)
        let started = ContinuousClock.now
        let ended = Mutex<ContinuousClock.Instant?>(nil)
        Task {
            let result: Result<Int, any Error>
            do {
                result = .success(try await withDeadline(timeout, operation))
            } catch {
                result = .failure(error)
            }
            ended.withLock { $0 = .now }
            answered.withLock { $0 = result }
        }
        _ = await eventually(timeout: 10) { answered.withLock { $0 != nil } }
        return (answered.withLock { $0 }, (ended.withLock { $0 } ?? .now) - started)
    }

    @Test("the caller is answered at the deadline even when the operation does not end on its cancellation")
    func deafOperation() async throws {
        let gate = HeldOperation()
        let (result, after) = await Self.answer(within: .milliseconds(300)) {
            await gate.wait()
            return 1
        }
        gate.open()
        let error = try #require(result.map { result -> (any Error)? in if case .failure(let error) = result { error } else { nil } } ?? nil)
        #expect(error is DeadlineExceeded, "\(error)")
        #expect(after >= .milliseconds(300), "answered \(after) after the call, before its deadline")
    }

    @Test("an operation that ends in time gives its value, and one that fails its error")
    func inTime() async throws {
        let (value, _) = await Self.answer(within: .seconds(30)) { 7 }
        #expect(try value?.get() == 7)
        struct Refused: Error {}
        let (failed, _) = await Self.answer(within: .seconds(30)) { throw Refused() }
        #expect(throws: Refused.self) { try failed?.get() }
    }

    @Test("a cancelled caller is answered at once, and its operation is cancelled")
    func cancelledCaller() async throws {
        let sawCancellation = Mutex(false)
        let call = Task {
            try await withDeadline(.seconds(30)) {
                do {
                    try await Task.sleep(for: .seconds(30))
                } catch {
                    sawCancellation.withLock { $0 = true }
                    throw error
                }
                return 1
            }
        }
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(await eventually(timeout: 10) { sawCancellation.withLock { $0 } })
    }
}
