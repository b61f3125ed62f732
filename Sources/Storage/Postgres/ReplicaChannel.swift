import Accounts
import AppleID
import Foundation
import Logging
import Metrics
import PostgresNIO
import SQLKit
import Synchronization

/// The replicas' protocol for changes that end sessions some replica may remember, over PostgreSQL's `LISTEN`/`NOTIFY`
/// (docs/replicas-postgresql.md), on connections of its own (`application_name` `orchard-listener`).
///
/// A change that ends sessions is announced (`E`); each registered replica drops them from memory, stops remembering
/// them and acknowledges (`A`); once every replica whose lease is current has acknowledged, or its lease has passed, the
/// change commits, its outcome is announced (`D`, naming what it ended, which every replica drops again), and only then
/// is it answered. A commit that returned later than ``SessionTimings/commitWithin`` after its announcement is announced
/// and acknowledged once more before it is answered, since the replicas' marks may have lapsed meanwhile.
///
/// The listening side runs as ``ReplicaListener``, a service of `serve`'s service group; a process without it (an
/// operator's command) hears the acknowledgements of each change on a connection opened for that change.
final class ReplicaChannel: Sendable {
    /// The channel every message goes through.
    static let channel = "orchard_sessions"

    /// Whether this process answers from memory (and so registers and renews a lease).
    let answering: Bool
    /// The memory of an answering replica.
    let memory: SessionMemory?
    /// This process, as the origin of its announcements.
    let processID: String
    let connect: @Sendable () async throws -> PostgresConnection
    let clock: any MonotonicClock
    let timings: SessionTimings
    let logger: Logger
    let invalidations: Counter
    let endWait: Metrics.Timer
    let enabled: Gauge
    let state = Mutex(State())

    struct State {
        /// The registration the listener holds (answering replicas), changed at every reconnection.
        var registration: String?
        /// Whether the listener hears the channel now (it heard its own self-test on this connection).
        var hearing = false
        /// Changes this process announced and waits on, with the events that wake them.
        var waiters: [String: AsyncStream<String>.Continuation] = [:]
        /// Self-tests waiting to be heard, by token.
        var selfTests: [String: AsyncStream<Void>.Continuation] = [:]
    }

    init(
        answering: Bool,
        memory: SessionMemory?,
        connect: @escaping @Sendable () async throws -> PostgresConnection,
        clock: any MonotonicClock,
        timings: SessionTimings,
        metrics: any MetricsFactory,
        logger: Logger
    ) {
        self.answering = answering
        self.memory = memory
        self.processID = SystemRandomSource().id("p")
        self.connect = connect
        self.clock = clock
        self.timings = timings
        self.logger = logger
        self.invalidations = Counter(label: "orchard_session_cache_invalidations_total", factory: metrics)
        self.endWait = Metrics.Timer(label: "orchard_session_end_wait_seconds", preferredDisplayUnit: .seconds, factory: metrics)
        self.enabled = Gauge(label: "orchard_session_cache_enabled", factory: metrics)
        enabled.record(0)
    }

    /// Runs `change` (a transaction that ends `target`'s sessions) after every answering replica has stopped answering
    /// for them, and announces its outcome.
    ///
    /// Bounded as a whole by ``SessionTimings/changeLimit``: past it the change is cancelled (a transaction not yet
    /// committed rolls back; one committed has ended its sessions, and the replicas' marks lapse) and fails as
    /// unavailable, so that a request is answered even when a connection hangs.
    func ending<T: Sendable>(
        _ target: SessionEndTarget,
        on database: any DatabaseClient,
        _ change: @escaping @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        // The caller is answered at the limit whatever the work does then (`withDeadline`).
        do {
            return try await withDeadline(timings.changeLimit) { try await self.unboundedEnding(target, on: database, change) }
        } catch is DeadlineExceeded {
            logger.warning("a session change did not finish in time; cancelled")
            throw StoreError.unavailable("a session change did not finish in time")
        }
    }

    private func unboundedEnding<T: Sendable>(
        _ target: SessionEndTarget,
        on database: any DatabaseClient,
        _ change: @escaping @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        if state.withLock({ $0.hearing }) {
            return try await ending(target, on: database, hearing: nil, change)
        }
        // No listener hears the channel in this process (a command, or a replica between connections): hear this
        // change's acknowledgements on a connection of its own. Its statements are not the pool's, which the operation
        // deadline bounds, and a query on a connection the server has closed is never answered: cancelled (see
        // ``ending(_:on:_:)``), the connection is closed, which fails what waits on it.
        let connection = try await connect()
        let result: Result<T, any Error>
        do {
            result = .success(
                try await withTaskCancellationHandler {
                    try await listenForChange(target, on: database, connection: connection, change)
                } onCancel: {
                    let closing: EventLoopFuture<Void> = connection.close()
                    _ = closing
                }
            )
        } catch {
            result = .failure(error)
        }
        try? await connection.close()
        return try result.get()
    }

    /// The change, hearing its acknowledgements on `connection` (this process's own, for the change alone).
    private func listenForChange<T: Sendable>(
        _ target: SessionEndTarget,
        on database: any DatabaseClient,
        connection: PostgresConnection,
        _ change: @escaping @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        try await connection.listen(on: Self.channel) { notifications in
            try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask {
                    for try await notification in notifications {
                        try await self.hear(notification.payload, registration: nil, on: nil)
                    }
                    return nil
                }
                group.addTask { try await self.ending(target, on: database, hearing: connection, change) }
                defer { group.cancelAll() }
                while let next = try await group.next() {
                    if let value = next { return value }
                }
                throw StoreError.unavailable("the session listener's connection ended")
            }
        }
    }

    private func ending<T: Sendable>(
        _ target: SessionEndTarget,
        on database: any DatabaseClient,
        hearing: PostgresConnection?,
        _ change: @escaping @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        for _ in 0..<3 {
            let changeID = SystemRandomSource().id("c")
            let announced = clock.now
            guard try await announceAndWait(changeID, target, on: database) else { continue }
            endWait.recordNanoseconds(Int64((clock.now - announced).nanoseconds))
            let result: T
            do {
                let clock = self.clock
                let commitWithin = timings.commitWithin
                result = try await database.transaction { db in
                    let result = try await change(db)
                    guard clock.now - announced < commitWithin else { throw LateCommit() }
                    return result
                }
            } catch {
                // Rolled back: the replicas may remember again (a late commit is announced anew, next time round).
                memory?.resolve(changeID, ending: nil)
                await sendOutcome(changeID, nil, on: database)
                if error is LateCommit { continue }
                throw error
            }
            if clock.now - announced > timings.commitWithin {
                // The commit returned after the replicas' marks may have lapsed: a replica may have read the sessions
                // as live meanwhile. Announced again and acknowledged, so that none remembers them once this answers.
                let again = SystemRandomSource().id("c")
                _ = try? await announceAndWait(again, target, on: database)
                memory?.resolve(again, ending: target)
                await sendOutcome(again, target, on: database)
            }
            memory?.resolve(changeID, ending: target)
            await sendOutcome(changeID, target, on: database)
            return result
        }
        throw StoreError.unavailable("the replicas did not acknowledge the end of a session")
    }

    /// Marks this process's memory, announces the change and waits until every replica with a current lease has
    /// acknowledged it or let its lease pass: `true` then; `false` when some did neither within
    /// ``SessionTimings/ackWait`` (the change is announced again).
    private func announceAndWait(_ changeID: String, _ target: SessionEndTarget, on database: any DatabaseClient) async throws -> Bool {
        let announced = clock.now
        if memory?.mark(changeID, target) != nil { invalidations.increment() }
        let (events, wake) = AsyncStream.makeStream(of: String.self)
        state.withLock { $0.waiters[changeID] = wake }
        defer { _ = state.withLock { $0.waiters.removeValue(forKey: changeID) } }
        let message = "E|\(changeID)|\(processID)|" + Self.encode(target)
        let registration = state.withLock { $0.registration } ?? ""
        var waitingOn = Set(
            try await database.read(
                """
                SELECT id FROM session_cache_replicas
                WHERE lease_until > \(unsafeRaw: Self.databaseNow) AND id <> \(bind: registration)
                UNION ALL SELECT NULL FROM (SELECT pg_notify(\(bind: Self.channel), \(bind: message))) AS announced
                """
            ).compactMap { try $0.decodeNil(column: "id") ? nil : try $0.decode(column: "id", as: String.self) }
        )
        guard !waitingOn.isEmpty else { return true }
        let ticker = Task {
            while !Task.isCancelled {
                try? await clock.sleep(for: timings.ackRecheck)
                wake.yield("")
            }
        }
        defer { ticker.cancel() }
        for await replica in events {
            waitingOn.remove(replica)
            if replica.isEmpty, !waitingOn.isEmpty {
                // A replica that stopped renewing no longer holds the change up once its lease has passed.
                let current = Set(
                    try await database.read(
                        """
                        SELECT id FROM session_cache_replicas
                        WHERE lease_until > \(unsafeRaw: Self.databaseNow) AND id IN (\(binds: Array(waitingOn)))
                        """
                    ).map { try $0.decode(column: "id", as: String.self) }
                )
                waitingOn.formIntersection(current)
            }
            if waitingOn.isEmpty { return true }
            if clock.now - announced > timings.ackWait { break }
        }
        logger.warning("replicas did not acknowledge a session end in time; announcing it again", metadata: ["replicas": "\(waitingOn.count)"])
        memory?.resolve(changeID, ending: nil)
        return false
    }

    /// Tells every replica how the change ended (`D`), naming what it ended so that each drops it whatever became of
    /// its mark. Best effort: a replica that misses it drops the change's mark when the mark lapses.
    private func sendOutcome(_ changeID: String, _ target: SessionEndTarget?, on database: any DatabaseClient) async {
        let message = "D|\(changeID)|" + (target.map(Self.encode) ?? "|")
        _ = try? await database.read("SELECT pg_notify(\(bind: Self.channel), \(bind: message)) AS sent")
    }

    /// A change past ``SessionTimings/commitWithin`` rolls back.
    private struct LateCommit: Error {}

    /// PostgreSQL's clock in milliseconds since 1970, as leases are written.
    static let databaseNow = "(extract(epoch from clock_timestamp()) * 1000)::bigint"

    static func encode(_ target: SessionEndTarget) -> String {
        switch target {
        case .sessions(let hashes): "s|" + hashes.joined(separator: ",")
        case .accounts(let ids): "a|" + ids.joined(separator: ",")
        }
    }

    static func decode(_ kind: Substring, _ list: Substring) -> SessionEndTarget? {
        let items = list.split(separator: ",").map(String.init)
        switch kind {
        case "s": return .sessions(items)
        case "a": return .accounts(items)
        default: return nil
        }
    }
}
