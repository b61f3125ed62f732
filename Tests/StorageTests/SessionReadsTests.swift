import Accounts
import OrchardTesting
import Synchronization
import Testing

@testable import Storage

/// How PostgreSQL's session checks read together, without a database: which token hashes each read is given, and what
/// each check is answered.
@Suite("Session reads: checks that arrive while others read are read together, never by a read that began before them", .backendIndependent)
struct SessionReadsTests {
    /// A read that records the token hashes it was given and waits until the test opens it.
    final class HeldReads: Sendable {
        private struct State {
            var calls: [[String]] = []
            var held: [CheckedContinuation<Void, Never>] = []
        }

        private let state = Mutex(State())
        /// The token hashes that fail a read they are in.
        let failing: Set<String>

        init(failing: Set<String> = []) {
            self.failing = failing
        }

        var calls: [[String]] { state.withLock { $0.calls } }
        var heldCount: Int { state.withLock { $0.held.count } }

        func read(_ tokenHashes: [String]) async throws -> [SessionWithAccount] {
            await withCheckedContinuation { continuation in
                state.withLock {
                    $0.calls.append(tokenHashes)
                    $0.held.append(continuation)
                }
            }
            if !failing.isDisjoint(with: tokenHashes) { throw StoreError.unavailable("the read failed") }
            return tokenHashes.filter { $0 != "unknown" }.map { SessionMemoryTests.live($0) }
        }

        /// Lets the oldest held read answer.
        func openOne() {
            state.withLock { $0.held.isEmpty ? nil : $0.held.removeFirst() }?.resume()
        }

        /// Lets every held read answer, so that a test that failed ends instead of waiting for good.
        func openAll() {
            let held = state.withLock { state in
                defer { state.held = [] }
                return state.held
            }
            for continuation in held { continuation.resume() }
        }
    }

    /// Starts a check of `tokenHash` and waits until it reads (`waiting` 0) or is the `waiting`th check waiting to read.
    static func check(
        _ tokenHash: String,
        _ reads: SessionReads,
        _ held: HeldReads,
        waiting: Int
    ) async -> Task<SessionWithAccount?, any Error> {
        let task = Task { try await reads.session(tokenHash: tokenHash, read: held.read) }
        #expect(await eventually(timeout: 30) { waiting == 0 ? held.calls.joined().contains(tokenHash) : reads.waitingCount == waiting })
        return task
    }

    @Test("checks that arrive during a read wait for the next, which takes them in arrival order, at most mostPerRead at once")
    func readTogether() async throws {
        let reads = SessionReads(clock: ManualMonotonicClock(), mostReading: 2, slowRead: .seconds(3_600), mostPerRead: 3)
        let held = HeldReads()
        let first = await Self.check("a", reads, held, waiting: 0)
        try #require(await eventually(timeout: 30) { !held.calls.isEmpty })
        #expect(held.calls == [["a"]])
        var later: [String: Task<SessionWithAccount?, any Error>] = [:]
        for (index, tokenHash) in ["b", "c", "unknown", "d", "e"].enumerated() {
            later[tokenHash] = await Self.check(tokenHash, reads, held, waiting: index + 1)
        }
        #expect(held.calls == [["a"]], "nothing read beside a read that is not slow")

        held.openOne()
        #expect(try await first.value?.session.tokenHash == "a")
        try #require(await eventually(timeout: 30) { held.calls.count >= 2 })
        #expect(held.calls[1] == ["b", "c", "unknown"], "the next read leads with the oldest waiting check")
        held.openOne()
        try #require(await eventually(timeout: 30) { held.calls.count >= 3 })
        #expect(held.calls[2] == ["d", "e"])
        held.openAll()
        for (tokenHash, task) in later {
            let answer = try await task.value
            #expect(answer?.session.tokenHash == (tokenHash == "unknown" ? nil : tokenHash), "\(tokenHash)")
        }
        #expect(reads.waitingCount == 0)

        // With the reads done, the next check reads at once, alone.
        let alone = await Self.check("f", reads, held, waiting: 0)
        try #require(await eventually(timeout: 30) { held.calls.count >= 4 })
        #expect(held.calls[3] == ["f"])
        held.openAll()
        #expect(try await alone.value?.session.tokenHash == "f")
    }

    @Test("a failed read fails only the checks it took; a check that waited reads next, after the failure")
    func failureStaysInItsRead() async throws {
        let reads = SessionReads(clock: ManualMonotonicClock(), mostReading: 2, slowRead: .seconds(3_600))
        let held = HeldReads(failing: ["a"])
        let first = await Self.check("a", reads, held, waiting: 0)
        let second = await Self.check("b", reads, held, waiting: 1)
        held.openOne()
        await #expect(throws: StoreError.self) { try await first.value }
        try #require(await eventually(timeout: 30) { held.calls.count >= 2 })
        #expect(held.calls == [["a"], ["b"]], "the waiting check was not in the failed read")
        held.openAll()
        #expect(try await second.value?.session.tokenHash == "b")
    }

    @Test("a check that finds the latest read slow reads at once beside it, up to mostReading reads")
    func readsBeside() async throws {
        let reads = SessionReads(clock: ManualMonotonicClock(), mostReading: 2, slowRead: .zero)
        let held = HeldReads()
        let first = await Self.check("a", reads, held, waiting: 0)
        let second = await Self.check("b", reads, held, waiting: 0)
        try #require(await eventually(timeout: 30) { held.heldCount >= 2 })
        #expect(held.calls == [["a"], ["b"]])
        let third = await Self.check("c", reads, held, waiting: 1)
        held.openOne()
        held.openOne()
        try #require(await eventually(timeout: 30) { held.calls.count >= 3 })
        #expect(held.calls[2] == ["c"])
        held.openAll()
        #expect(try await first.value?.session.tokenHash == "a")
        #expect(try await second.value?.session.tokenHash == "b")
        #expect(try await third.value?.session.tokenHash == "c")
    }

    /// A clock that stands still, but can be told to jump forward right after its next read: the instant a slot is
    /// handed over is read, and the leader it was handed to runs late.
    final class JumpingClock: MonotonicClock {
        private let state = Mutex((now: Duration.seconds(1_000), jump: Duration.zero))
        var now: Duration {
            state.withLock { state in
                defer {
                    state.now += state.jump
                    state.jump = .zero
                }
                return state.now
            }
        }
        func jumpAfterNextRead(by duration: Duration) { state.withLock { $0.jump = duration } }
        func sleep(until deadline: Duration) async throws { try await Task.sleep(for: .milliseconds(1)) }
    }

    @Test("a leader handed the read slot that runs late still gets its own slowRead before a check reads beside it")
    func lateLeaderGetsItsOwnSlowRead() async throws {
        let clock = JumpingClock()
        // The slot is handed over at H (the clock's next read), and the leader it goes to starts its read 100 ms
        // later. Counted from the leader's start (SessionReads' `lead()`), a check arriving then finds the read 0 ms
        // old, under slowRead, and waits; counted from the hand-over it would find it 100 ms old and read beside it.
        let reads = SessionReads(clock: clock, mostReading: 2, slowRead: .milliseconds(50))
        let held = HeldReads()
        let first = await Self.check("a", reads, held, waiting: 0)
        let second = await Self.check("b", reads, held, waiting: 1)
        clock.jumpAfterNextRead(by: .milliseconds(100))
        held.openOne()
        try #require(await eventually(timeout: 30) { held.calls.count >= 2 })
        #expect(held.calls[1] == ["b"])
        let third = Task { try await reads.session(tokenHash: "c", read: held.read) }
        try #require(await eventually(timeout: 30) { reads.waitingCount == 1 || held.calls.joined().contains("c") })
        #expect(held.calls.count == 2, "a check read beside a read that had run for less than slowRead: \(held.calls)")
        held.openAll()
        try #require(await eventually(timeout: 30) { held.calls.joined().contains("c") })
        held.openAll()
        #expect(try await first.value?.session.tokenHash == "a")
        #expect(try await second.value?.session.tokenHash == "b")
        #expect(try await third.value?.session.tokenHash == "c")
    }
}
