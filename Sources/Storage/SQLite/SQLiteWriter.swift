import Accounts
import AppleID
import Dispatch
import GRDB
import Logging
import Synchronization

/// The one writer of an SQLite file, committing concurrent transactions together (group commit).
///
/// A caller's transaction joins the queue. When no group is running, the caller leads one: it takes every write
/// queued so far, runs them one after the other inside one `BEGIN IMMEDIATE … COMMIT`, each in its own savepoint (a
/// write that throws is rolled back alone), and answers each caller only after the `COMMIT` returned, so every answer
/// means durable data (`synchronous=FULL`). Writes that arrived meanwhile form the next group, which the first of them
/// leads. The fsync of a commit is thus paid once per group, not once per request. `BEGIN` and `COMMIT` run on a
/// dispatch queue of their own, so waiting for the lock or the disk never blocks Swift's cooperative threads.
///
/// A group that fails (the file locked by another process past the busy timeout, a full disk) is logged at most once
/// per 10 s, with the count left unlogged (see ``FailureLogSpacing``): while the file stays locked, every write and every
/// job kind's claim fails alike, and a line for each would flood the log. The first commit after logged failures says
/// how many groups failed.
final class SQLiteWriter: Sendable {
    private struct Queue {
        var pending: [any SQLiteGroupWrite] = []
        var leading = false
        var statistics = SQLiteCommitStatistics()
    }

    /// The most writes one group commits.
    static let maximumGroupSize = 256

    private let pool: DatabasePool
    private let logger: Logger
    private let queue = Mutex(Queue())
    private let diskQueue = DispatchQueue(label: "orchard.sqlite.commit")
    private let failures = FailureLogSpacing(clock: SystemWallClock(), interval: .seconds(10))

    init(pool: DatabasePool, logger: Logger) {
        self.pool = pool
        self.logger = logger
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
        let leads = queue.withLock { queue in
            queue.pending.append(write)
            guard !queue.leading else { return false }
            queue.leading = true
            return true
        }
        if leads {
            await runGroup()
        } else if await write.wait() == .lead {
            await runGroup()
        }
        return try write.outcome()
    }

    /// Takes the writes at the head of the queue, commits them, answers their callers and hands the lead on.
    private func runGroup() async {
        let group = queue.withLock { queue -> [any SQLiteGroupWrite] in
            guard let first = queue.pending.first else { return [] }
            let count =
                first.isExclusive
                ? 1 : queue.pending.prefix(Self.maximumGroupSize).prefix(while: { !$0.isExclusive }).count
            let group = Array(queue.pending.prefix(count))
            queue.pending.removeFirst(count)
            if !first.isExclusive {
                queue.statistics.groups += 1
                queue.statistics.transactions += count
            }
            return group
        }
        if group.count == 1, group[0].isExclusive {
            _ = await group[0].run(on: GRDBSQLDatabase(route: .writer(pool), logger: logger))
        } else if !group.isEmpty {
            await commit(group)
        }
        for write in group { write.signal(.done) }
        let next = queue.withLock { queue -> (any SQLiteGroupWrite)? in
            if let next = queue.pending.first { return next }
            queue.leading = false
            return nil
        }
        next?.signal(.lead)
    }

    private func commit(_ group: [any SQLiteGroupWrite]) async {
        let database = GRDBSQLDatabase(route: .writer(pool), logger: logger)
        let savepoints = group.count > 1
        do {
            try await onDiskQueue { try $0.execute(sql: "BEGIN IMMEDIATE") }
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
            try await onDiskQueue { try $0.execute(sql: end) }
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
            try? await onDiskQueue { db in if db.isInsideTransaction { try db.execute(sql: "ROLLBACK") } }
            for write in group { write.fail(with: failure) }
        }
    }

    private func isInsideTransaction() -> Bool {
        pool.writeWithoutTransaction { $0.isInsideTransaction }
    }

    private func execute(_ sql: String) throws {
        try pool.writeWithoutTransaction { try $0.execute(sql: sql) }
    }

    /// Runs `work` on the writer connection from the commit queue, off Swift's cooperative threads and untouched by
    /// the calling task's cancellation (a cancelled request must not abort a commit other requests share).
    private func onDiskQueue(_ work: @escaping @Sendable (Database) throws -> Void) async throws {
        let pool = self.pool
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            diskQueue.async {
                continuation.resume(with: Result { try pool.writeWithoutTransaction(work) })
            }
        }
    }
}
