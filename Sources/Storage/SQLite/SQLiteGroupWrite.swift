import Synchronization

/// One caller's write waiting for the SQLite writer: its body, and how the writer tells the caller it is done.
protocol SQLiteGroupWrite: AnyObject, Sendable {
    /// Whether the write must run alone and outside a transaction (a `PRAGMA` such as `wal_checkpoint`).
    var isExclusive: Bool { get }
    /// Runs the body on the writer; `false` when it threw (its error is kept as the caller's answer).
    func run(on database: GRDBSQLDatabase) async -> Bool
    /// Replaces a successful outcome with `error`: the group's commit failed, so nothing of the write is durable.
    func fail(with error: any Error)
    /// Wakes the caller: the write was committed (or failed), and its outcome is final.
    func finish()
}

/// A pending write whose body returns a `T`.
final class SQLitePendingWrite<T: Sendable>: SQLiteGroupWrite {
    private struct State {
        /// The caller's body, dropped once it ran or the write is done: the caller's closure must not outlive its call.
        var body: (@Sendable (GRDBSQLDatabase) async throws -> T)?
        var outcome: Result<T, any Error>?
        var finished = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    let isExclusive: Bool
    private let state: Mutex<State>

    init(isExclusive: Bool, body: @escaping @Sendable (GRDBSQLDatabase) async throws -> T) {
        self.isExclusive = isExclusive
        self.state = Mutex(State(body: body))
    }

    func run(on database: GRDBSQLDatabase) async -> Bool {
        let taken = state.withLock { state in
            defer { state.body = nil }
            return state.body
        }
        guard let body = taken else { return false }
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try await body(database))
        } catch {
            outcome = .failure(error)
        }
        state.withLock { $0.outcome = outcome }
        if case .success = outcome { return true }
        return false
    }

    func fail(with error: any Error) {
        state.withLock { state in
            if case .failure = state.outcome { return }
            state.outcome = .failure(error)
        }
    }

    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.body = nil
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Waits until the writer finished the write.
    func wait() async {
        await withCheckedContinuation { continuation in
            let finished = state.withLock { state in
                if !state.finished { state.waiter = continuation }
                return state.finished
            }
            if finished { continuation.resume() }
        }
    }

    /// The body's value, or its error, or the group's commit error.
    func outcome() throws -> T {
        guard let outcome = state.withLock({ $0.outcome }) else {
            throw SQLiteWriterError.notRun
        }
        return try outcome.get()
    }
}

/// A write that the writer dropped without running it.
enum SQLiteWriterError: Error, CustomStringConvertible {
    /// The write did not run: its group's transaction was lost, or the database was closed.
    case notRun

    var description: String { "the SQLite write did not run: its group's transaction was lost, or the database was closed" }
}
