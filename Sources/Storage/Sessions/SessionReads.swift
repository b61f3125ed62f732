import Accounts
import Synchronization

/// Session checks that go to the database, read together: while a read runs, the checks that arrive wait, and the
/// next read takes them all (up to ``mostPerRead``) in one statement.
///
/// Nothing is answered from an older read: a check's token hash is taken into a read only after the check arrived, so a
/// change committed before it arrived is seen. A check that finds no read running reads at once; so does one that
/// finds the latest read running for longer than ``slowRead``, up to ``mostReading`` reads, and takes the checks
/// waiting then along (so a stalled connection holds the checks waiting behind it until the next check arrives, or
/// until the operation deadline ends its read). A check that waits is either answered by the read that took it or
/// handed the slot to lead the next read itself, so no task is started here. A read's failure is every check's in it.
/// `Benchmarks/run --start-postgres` ("cache off") measures it: one read at a time shares each round trip among more
/// checks than two did, for less of serve's CPU per check.
final class SessionReads: Sendable {
    /// Reads that may run at once, while the latest has run for longer than ``slowRead``.
    let mostReading: Int
    /// How long a read runs before a check may start another beside it.
    let slowRead: Duration
    /// Token hashes one read takes at most.
    let mostPerRead: Int
    /// The time ``slowRead`` is counted in.
    let clock: any MonotonicClock

    private enum Turn: Sendable {
        /// The read that took this check answered it.
        case answered(Result<SessionWithAccount?, any Error>)
        /// A read slot passed to this check: it leads the next read.
        case lead
    }

    private struct Waiting {
        let tokenHash: String
        let continuation: CheckedContinuation<Turn, Never>
    }

    private struct State {
        var reading = 0
        var latestStart: Duration = .zero
        var waiting: [Waiting] = []

        /// Whether a check arriving at `now` may start a read.
        func mayStart(_ reads: SessionReads, now: Duration) -> Bool {
            reading == 0 || (reading < reads.mostReading && now - latestStart >= reads.slowRead)
        }

        /// A read is about to start at `now`: counted, and the latest from now, so that no check starts another beside
        /// it before this one has had ``slowRead`` to answer.
        mutating func starting(at now: Duration) {
            reading += 1
            latestStart = now
        }
    }

    private let state = Mutex(State())

    /// Checks waiting to read.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    init(clock: any MonotonicClock, mostReading: Int = 4, slowRead: Duration = .milliseconds(50), mostPerRead: Int = 64) {
        precondition(mostReading >= 1 && mostPerRead >= 1, "a read slot and a check per read at least")
        self.clock = clock
        self.mostReading = mostReading
        self.slowRead = slowRead
        self.mostPerRead = mostPerRead
    }

    /// The session behind `tokenHash`, from a read that began after this call: `read` reads the sessions of the token
    /// hashes it is given (the ones it finds), and runs for this check and any that wait with it.
    func session(
        tokenHash: String,
        read: ([String]) async throws -> [SessionWithAccount]
    ) async throws -> SessionWithAccount? {
        let leads = state.withLock { state in
            let now = clock.now
            guard state.waiting.isEmpty, state.mayStart(self, now: now) else { return false }
            state.starting(at: now)
            return true
        }
        if !leads {
            let turn = await withCheckedContinuation { continuation in
                let leadsNow = state.withLock { state in
                    let now = clock.now
                    guard state.mayStart(self, now: now) else {
                        state.waiting.append(Waiting(tokenHash: tokenHash, continuation: continuation))
                        return false
                    }
                    state.starting(at: now)
                    return true
                }
                if leadsNow { continuation.resume(returning: .lead) }
            }
            if case .answered(let result) = turn { return try result.get() }
        }
        return try await lead(tokenHash, read: read).get()
    }

    /// Reads `tokenHash` with the checks waiting, answers them, and passes the read slot to the next waiting check, or
    /// frees it.
    private func lead(
        _ tokenHash: String,
        read: ([String]) async throws -> [SessionWithAccount]
    ) async -> Result<SessionWithAccount?, any Error> {
        let taken = state.withLock { state in
            // Again now that the read runs: a leader handed the slot may run late under load, and its read still gets
            // its own slowRead before a check starts another beside it.
            state.latestStart = clock.now
            let count = min(state.waiting.count, mostPerRead - 1)
            defer { state.waiting.removeFirst(count) }
            return Array(state.waiting.prefix(count))
        }
        let found: Result<[String: SessionWithAccount], any Error>
        do {
            let sessions = try await read([tokenHash] + taken.map(\.tokenHash))
            found = .success(Dictionary(sessions.map { ($0.session.tokenHash, $0) }, uniquingKeysWith: { first, _ in first }))
        } catch {
            found = .failure(error)
        }
        // The next read starts before these answers go out.
        let next = state.withLock { state -> Waiting? in
            guard !state.waiting.isEmpty else {
                state.reading -= 1
                return nil
            }
            state.latestStart = clock.now
            return state.waiting.removeFirst()
        }
        next?.continuation.resume(returning: .lead)
        for waiting in taken {
            waiting.continuation.resume(returning: .answered(found.map { $0[waiting.tokenHash] }))
        }
        return found.map { $0[tokenHash] }
    }
}
