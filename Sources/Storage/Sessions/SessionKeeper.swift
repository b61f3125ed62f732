public import Accounts
public import Foundation
public import Logging
public import Metrics
import PostgresNIO
import SQLKit
public import ServiceLifecycle
import Synchronization

/// What a backend brings to the session memory's coherence; made when its database is opened.
public enum SessionBackend: Sendable {
    /// SQLite: one process answers; another process's changes (an operator's command beside `serve`) are seen through
    /// the database's change counter.
    case singleProcess(SQLiteChangeWatch)
    /// PostgreSQL: the replicas' announcements over `LISTEN`/`NOTIFY`, on connections of their own.
    case replicas(ListenerConnections)
}

/// Where the replicas' listener connections come from (`ORCHARD_DATABASE_LISTEN_URL`): a connection of its own each
/// time, never one of the pool's.
public struct ListenerConnections: Sendable {
    let connect: @Sendable () async throws -> PostgresConnection
}

extension SessionBackend {
    /// The backend of a database Orchard opened itself (SQLite's or PostgreSQL's client); `nil` for any other.
    public static func of(_ database: any DatabaseClient) -> SessionBackend? {
        if let sqlite = database as? SQLiteDatabaseClient { return sqlite.sessionBackend }
        if let postgres = database as? PostgresDatabaseClient { return postgres.sessionBackend }
        return nil
    }
}

/// The one owner of the session memory, on both backends: it answers the session checks (from memory when it may,
/// else from the database), and it is the one path of every change that ends sessions or changes what a check shows
/// (``ending(_:_:)``, ``changing(_:_:)``), which tells the memory, and on PostgreSQL every replica, before it commits.
///
/// The generic ``DatabaseClient`` knows nothing of sessions; the stores hold a keeper beside it. On SQLite the memory is
/// the process's own (a change drops its sessions before it commits; another process's commits move the
/// `session_epoch` counter, which makes it forget); on PostgreSQL it is kept coherent across replicas by
/// ``ReplicaChannel``. See docs/replicas-postgresql.md and docs/layout.md.
public final class SessionKeeper: Sendable {
    /// The database the changes and the reads run on.
    let database: any DatabaseClient
    /// The memory, when this process answers from it (`serve` with `ORCHARD_SESSION_CACHE=on`).
    let memory: SessionMemory?
    /// The replicas' protocol (PostgreSQL).
    let replicas: ReplicaChannel?
    /// Another process's changes (SQLite).
    let watch: SQLiteChangeWatch?
    /// Checks that read the database together (PostgreSQL).
    let reads: SessionReads?
    /// The last-seen minutes waiting to be written.
    let seen = SeenWrites()
    let clock: any MonotonicClock
    let logger: Logger
    private let hits: Counter
    private let misses: Counter
    private let epochs = Mutex(Epochs())

    /// What this process knows of SQLite's `session_epoch`.
    private struct Epochs {
        /// The epoch as last looked at.
        var known: Int64 = 0
        /// Epochs this process's own committed changes set, not yet looked past.
        var own: Set<Int64> = []
    }

    /// Creates the keeper.
    ///
    /// - Parameters:
    ///   - database: The database the stores use (a test's wrapper of it included).
    ///   - backend: What the backend brings (``SQLiteDatabaseClient/sessionBackend()``,
    ///     ``PostgresDatabaseClient/sessionBackend``).
    ///   - answering: Whether this process answers session checks from memory (`serve` with the cache on).
    ///   - timings: The lifetimes and waits (the backend's standard ones by default).
    ///   - clock: The time they are counted in.
    public init(
        database: any DatabaseClient,
        backend: SessionBackend,
        answering: Bool,
        timings: SessionTimings? = nil,
        clock: any MonotonicClock = SystemMonotonicClock(),
        metrics: any MetricsFactory = MetricsSystem.factory,
        logger: Logger
    ) {
        self.database = database
        self.clock = clock
        self.logger = logger
        self.hits = Counter(label: "orchard_session_cache_hits_total", factory: metrics)
        self.misses = Counter(label: "orchard_session_cache_misses_total", factory: metrics)
        switch backend {
        case .singleProcess(let watch):
            let timings = timings ?? .singleProcess
            self.memory = answering ? SessionMemory(clock: clock, timings: timings, needsNoLease: true) : nil
            self.watch = watch
            self.replicas = nil
            self.reads = nil
            Gauge(label: "orchard_session_cache_enabled", factory: metrics).record(answering ? 1 : 0)
        case .replicas(let connections):
            let timings = timings ?? .replicas
            let memory = answering ? SessionMemory(clock: clock, timings: timings, needsNoLease: false) : nil
            self.memory = memory
            self.watch = nil
            self.replicas = ReplicaChannel(
                answering: answering,
                memory: memory,
                connect: connections.connect,
                clock: clock,
                timings: timings,
                metrics: metrics,
                logger: logger
            )
            self.reads = SessionReads(clock: clock)
        }
    }

    /// A keeper over a database Orchard opened itself (SQLite's or PostgreSQL's client), for tests and tools that hold
    /// one; a wrapper of one needs ``init(database:backend:answering:timings:clock:metrics:logger:)``.
    public convenience init(for database: any DatabaseClient, answering: Bool = false, logger: Logger = Logger(label: "orchard.sessions")) {
        guard let backend = SessionBackend.of(database) else {
            preconditionFailure("SessionKeeper(for:) takes Orchard's own SQLite or PostgreSQL client, not \(type(of: database))")
        }
        self.init(database: database, backend: backend, answering: answering, logger: logger)
    }

    // MARK: Session checks

    /// The session behind `tokenHash` for a session check (`GET /v1/session`, `POST /v1/session/token`): from memory
    /// when this process may answer for it, else from `read` (which reads the sessions of the token hashes it is given),
    /// then remembered.
    public func check(tokenHash: String, read: ([String]) async throws -> [SessionWithAccount]) async throws -> SessionWithAccount? {
        if let remembered = remembered(tokenHash: tokenHash) { return remembered }
        guard let memory else { return try await fresh(tokenHash: tokenHash, read: read) }
        misses.increment()
        let epoch = memory.epoch
        let value = try await fresh(tokenHash: tokenHash, read: read)
        if let value { memory.remember(tokenHash, value, readAt: epoch) }
        return value
    }

    /// The session behind `tokenHash` from memory, when this process may answer for it now; `nil` otherwise (then
    /// ``check(tokenHash:read:)`` reads). On SQLite it first looks whether another process committed since.
    public func remembered(tokenHash: String) -> SessionWithAccount? {
        guard let memory else { return nil }
        if watch != nil { lookPastOtherProcesses(memory) }
        guard let remembered = memory.lookup(tokenHash) else { return nil }
        hits.increment()
        return remembered
    }

    /// The session behind `tokenHash` as the database has it now (every route that writes reads this way).
    public func fresh(tokenHash: String, read: ([String]) async throws -> [SessionWithAccount]) async throws -> SessionWithAccount? {
        guard let reads else { return try await read([tokenHash]).first }
        return try await reads.session(tokenHash: tokenHash, read: read)
    }

    /// A check answered at `minute`: unless the session already shows that minute, its `last_seen_at` is to be written,
    /// once, by ``SeenWriter`` (never before the answer, and never by the check itself).
    public func noteSeen(tokenHash: String, minute: Date) {
        guard memory?.noteSeen(tokenHash, minute: minute) ?? true else { return }
        seen.add(tokenHash, minute: minute)
    }

    /// On SQLite, before the memory answers: whether another process committed since the last look, and if it moved
    /// `session_epoch` past what this process's own changes account for, the memory forgets everything.
    ///
    /// The look itself takes no lock of the keeper's (``SQLiteChangeWatch`` gives each concurrent look a connection of
    /// its own); only a look that found a commit compares its epoch with the known one, under `epochs`. Looks on two
    /// connections may come back out of order (the later epoch first): the earlier epoch then differs from the known
    /// one and makes the memory forget, which is never wrong, and no epoch is passed over without its range being
    /// checked (the known epoch moves only under the lock, after any forgetting it calls for).
    private func lookPastOtherProcesses(_ memory: SessionMemory) {
        guard let watch else { return }
        let look: SQLiteChangeWatch.Look
        do {
            look = try watch.look()
        } catch {
            // The file cannot be read: nothing is known of other processes, so nothing remembered is trusted.
            memory.forgetAll()
            return
        }
        guard case .committed(let epoch) = look else { return }
        epochs.withLock { epochs in
            guard epoch != epochs.known else { return }
            let ownOnly = epoch > epochs.known && (epochs.known + 1...epoch).allSatisfy { epochs.own.contains($0) }
            if !ownOnly { memory.forgetAll() }
            epochs.known = epoch
            epochs.own = epochs.own.filter { $0 > epoch }
        }
    }

    // MARK: The one path of changes

    /// Runs `change`, a transaction that ends sessions of `target` (on ``SessionChange``, which ends nothing outside
    /// it), once no process answers for them from memory: on SQLite the memory drops them before the transaction and
    /// the change moves `session_epoch`; on PostgreSQL every replica is told first (``ReplicaChannel``).
    public func ending<T: Sendable>(
        _ target: SessionEndTarget,
        _ change: @escaping @Sendable (SessionChange) async throws -> T
    ) async throws -> T {
        if let replicas {
            return try await replicas.ending(target, on: database) { db in try await change(SessionChange(db: db, target: target)) }
        }
        let changeID = SystemRandomSource().id("c")
        memory?.mark(changeID, target)
        do {
            let (result, epoch) = try await database.transaction { db in
                let result = try await change(SessionChange(db: db, target: target))
                return (result, try await Self.moveEpoch(on: db))
            }
            epochs.withLock { _ = $0.own.insert(epoch) }
            memory?.resolve(changeID, ending: target)
            return result
        } catch {
            memory?.resolve(changeID, ending: nil)
            throw error
        }
    }

    /// Runs `change`, a transaction that changes what a check shows of `target`'s sessions without ending them (an
    /// account's fields, its subject): this process's memory forgets them once it commits (another replica's within
    /// ``SessionTimings/entryLifetime``); on SQLite the change moves `session_epoch`.
    public func changing<T: Sendable>(
        _ target: SessionEndTarget,
        _ change: @escaping @Sendable (SessionChange) async throws -> T
    ) async throws -> T {
        let result: T
        if replicas != nil {
            result = try await database.transaction { db in try await change(SessionChange(db: db, target: target)) }
        } else {
            let (value, epoch) = try await database.transaction { db in
                (try await change(SessionChange(db: db, target: target)), try await Self.moveEpoch(on: db))
            }
            epochs.withLock { _ = $0.own.insert(epoch) }
            result = value
        }
        memory?.forget(target)
        return result
    }

    /// Moves SQLite's `session_epoch` on in the change's transaction; returns the value it now holds.
    private static func moveEpoch(on db: any SQLDatabase) async throws -> Int64 {
        guard let row = try await db.raw("UPDATE session_epoch SET value = value + 1 WHERE id = 1 RETURNING value").first() else {
            throw StoreError.unavailable("the database has no session_epoch row: run orchard migrate")
        }
        return try row.decode(column: "value", as: Int64.self)
    }

    // MARK: Services

    /// What runs beside the server while it serves: the writer of `last_seen_at`, the memory's sweep when it answers, and
    /// on PostgreSQL the replicas' listener. `serve` runs them in its service group; a process that checks no sessions
    /// runs none.
    public var services: [any Service] {
        var services: [any Service] = [SeenWriter(keeper: self)]
        if let memory { services.append(MemorySweep(memory: memory)) }
        if let replicas { services.append(ReplicaListener(channel: replicas, database: database)) }
        return services
    }

    /// Whether memory answers session checks now (PostgreSQL: while the lease is current and the warm-up passed).
    public var answersFromMemory: Bool { memory?.answers ?? false }
}
