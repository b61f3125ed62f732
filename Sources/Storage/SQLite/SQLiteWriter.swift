import Accounts
import AppleID
import Dispatch
import GRDB
import Logging
import Synchronization

/// The one writer of an SQLite file, committing concurrent transactions together (group commit).
///
/// A caller's transaction joins the queue and waits. The writer's own task, on a thread of its own
/// (``SQLiteWriterExecutor``), takes every write queued so far, runs them one after the other inside one
/// `BEGIN IMMEDIATE … COMMIT`, each in its own savepoint (a write that throws is rolled back alone), and answers each
/// caller only after the `COMMIT` returned, so every answer means durable data (`synchronous=FULL`). Writes that arrived
/// meanwhile form the next group. The fsync of a commit is thus paid once per group, not once per request. A group runs
/// from `BEGIN` to `COMMIT` without leaving the writer's thread: waiting for the lock or the disk blocks that thread
/// only, never Swift's cooperative threads (which serve's HTTP shares), and no step of a group waits in their queue
/// (Benchmarks/README, A15: what this did and did not change in `Benchmarks/run`'s SQLite ingest).
///
/// A group that fails (the file locked by another process past the busy timeout, a full disk) is logged at most once
/// per 10 s, with the count left unlogged (see ``FailureLogSpacing``): while the file stays locked, every write and every
/// job kind's claim fails alike, and a line for each would flood the log. The first commit after logged failures says
/// how many groups failed.
final class SQLiteWriter: Sendable {
    private struct Queue {
        var pending: [any SQLiteGroupWrite] = []
        /// The writer's task, waiting for a write.
        var idle: CheckedContinuation<Void, Never>?
        var stopped = false
        var statistics = SQLiteCommitStatistics()
    }

    /// The most writes one group commits.
    static let maximumGroupSize = 256

    private let pool: DatabasePool
    private let logger: Logger
    private let queue = Mutex(Queue())
    private let executor = SQLiteWriterExecutor()
    private let failures = FailureLogSpacing(clock: SystemWallClock(), interval: .seconds(10))
    /// The writer's task, from ``start()`` to ``stop()``.
    private let task = Mutex<Task<Void, Never>?>(nil)

    private init(pool: DatabasePool, logger: Logger) {
        self.pool = pool
        self.logger = logger
    }

    /// A writer of `pool`, its task running until ``stop()``.
    static func start(pool: DatabasePool, logger: Logger) -> SQLiteWriter {
        let writer = SQLiteWriter(pool: pool, logger: logger)
        let task = Task(executorPreference: writer.executor) { await writer.run() }
        writer.task.withLock { $0 = task }
        return writer
    }

    /// Commits what is queued, then ends the writer's task; a write that arrives later fails (``SQLiteWriterError``).
    func stop() async {
        let idle = queue.withLock { queue in
            queue.stopped = true
            defer { queue.idle = nil }
            return queue.idle
        }
        idle?.resume()
        await task.withLock { $0 }?.value
    }

    /// How many groups were committed so far, and how many transactions they held.
    var statistics: SQLiteCommitStatistics {
        queue.withLock { queue in
            var statistics = queue.statistics
            statistics.queued = queue.pending.count
            return statistics
        }
    }

    /// Runs `body` in a transaction committed with whatever other writes are waiting; returns once it is durable.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (GRDBSQLDatabase) async throws -> T) async throws -> T {
        try await enqueue(SQLitePendingWrite(isExclusive: false, body: body))
    }

    /// Runs `body` alone on the writer, outside any transaction (for `PRAGMA wal_checkpoint` and the like).
    func exclusive<T: Sendable>(_ body: @escaping @Sendable (GRDBSQLDatabase) async throws -> T) async throws -> T {
        try await enqueue(SQLitePendingWrite(isExclusive: true, body: body))
    }

    private func enqueue<T>(_ write: SQLitePendingWrite<T>) async throws -> T {
        let (accepted, idle) = queue.withLock { queue -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !queue.stopped else { return (false, nil) }
            queue.pending.append(write)
            defer { queue.idle = nil }
            return (true, queue.idle)
        }
        guard accepted else { throw SQLiteWriterError.notRun }
        idle?.resume()
        await write.wait()
        return try write.outcome()
    }

    /// The writer's task: commits the queue's groups, one after the other, until stopped with nothing queued.
    private func run() async {
        while let group = await nextGroup() {
            if group.count == 1, group[0].isExclusive {
                _ = await group[0].run(on: GRDBSQLDatabase(route: .writer(pool), logger: logger))
            } else {
                await commit(group)
            }
            for write in group { write.finish() }
        }
    }

    /// What the queue holds for the writer's task.
    private enum Take {
        /// The writes to commit next, in one group (or the one exclusive write).
        case group([any SQLiteGroupWrite])
        /// Nothing queued yet.
        case wait
        /// Stopped, with nothing queued.
        case stopped
    }

    /// The writes at the head of the queue, once there are any; `nil` once stopped with nothing queued.
    private func nextGroup() async -> [any SQLiteGroupWrite]? {
        while true {
            let take = queue.withLock { queue -> Take in
                guard let first = queue.pending.first else { return queue.stopped ? .stopped : .wait }
                let count =
                    first.isExclusive
                    ? 1 : queue.pending.prefix(Self.maximumGroupSize).prefix(while: { !$0.isExclusive }).count
                let group = Array(queue.pending.prefix(count))
                queue.pending.removeFirst(count)
                if !first.isExclusive {
                    queue.statistics.groups += 1
                    queue.statistics.transactions += count
                }
                return .group(group)
            }
            switch take {
            case .group(let group): return group
            case .stopped: return nil
            case .wait: break
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = queue.withLock { queue in
                    guard queue.pending.isEmpty, !queue.stopped else { return true }
                    queue.idle = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    private func commit(_ group: [any SQLiteGroupWrite]) async {
        let database = GRDBSQLDatabase(route: .writer(pool), logger: logger)
        let savepoints = group.count > 1
        do {
            try execute("BEGIN IMMEDIATE")
            var committed = false
            for write in group {
                if savepoints { try execute("SAVEPOINT orchard_group_write") }
                let succeeded = await write.run(on: database)
                guard isInsideTransaction() else {
                    throw StoreError.unavailable("SQLite rolled the transaction back")
                }
                if savepoints {
                    if !succeeded { try execute("ROLLBACK TO orchard_group_write") }
                    try execute("RELEASE orchard_group_write")
                }
                committed = committed || succeeded
            }
            let end = committed ? "COMMIT" : "ROLLBACK"
            try execute(end)
            // A group whose every write failed rolls back: the writes' own failures, not a failed commit.
            if committed, let failed = failures.success() {
                logger.info("SQLite group commits succeed again", metadata: ["sqlite.failed_groups": "\(failed)"])
            }
        } catch {
            let failure = GRDBSQLDatabase.mapped(error)
            if let unlogged = failures.failure() {
                logger.error(
                    "an SQLite group commit failed",
                    metadata: ["sqlite.group_size": "\(group.count)", "error": "\(failure)", "sqlite.unlogged_failures": "\(unlogged)"]
                )
            }
            try? rollBackIfOpen()
            for write in group { write.fail(with: failure) }
        }
    }

    private func isInsideTransaction() -> Bool {
        pool.writeWithoutTransaction { $0.isInsideTransaction }
    }

    private func rollBackIfOpen() throws {
        try pool.writeWithoutTransaction { db in if db.isInsideTransaction { try db.execute(sql: "ROLLBACK") } }
    }

    private func execute(_ sql: String) throws {
        try pool.writeWithoutTransaction { try $0.execute(sql: sql) }
    }
}

/// The thread the SQLite writer's task runs on: one serial dispatch queue, so that a group runs from `BEGIN` to
/// `COMMIT` without waiting in the cooperative pool's queue, and blocks only this thread while SQLite waits for the
/// disk or the file's lock.
final class SQLiteWriterExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "orchard.sqlite.writer")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
