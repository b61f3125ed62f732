import Accounts
import Foundation
import Logging
import Metrics
import NIOCore
import NIOPosix
import PostgresNIO
import SQLKit
import Synchronization

/// What a process does in the replicas' session protocol (docs/replicas-postgresql.md).
public enum SessionCacheRole: Sendable {
    /// Answers session checks from memory: registers, renews its lease, hears and acknowledges announcements
    /// (`orchard serve` with `ORCHARD_SESSION_CACHE=on`).
    case answering
    /// Remembers nothing, but announces the changes it makes that end sessions and waits for the answering replicas
    /// (the commands, and `serve` with the cache off).
    case announcing
    /// Takes no part: a connection that never ends a session (the test suites' administration of databases).
    case none
}

/// The replicas' protocol for ending sessions that some replica may remember, over PostgreSQL's `LISTEN`/`NOTIFY`
/// on one connection of its own (`application_name` `orchard-listener`).
///
/// A change that ends sessions is announced (`E`), each registered replica drops them from memory, stops remembering
/// them and acknowledges (`A`); once every replica whose lease is current has acknowledged or its lease has passed, the
/// change commits, its outcome is announced (`D`), and only then is it answered. A replica answers from memory only
/// while the lease it renews every half second through the listener connection is current and once it has listened
/// longer than a change may take from announcement to commit; a replica that loses its lease empties its memory.
final class SessionCoherence: Sendable {
    /// The channel every message goes through.
    static let channel = "orchard_sessions"
    /// How long a registration is current after a renewal.
    static let lease: Duration = .seconds(2)
    /// How often the registration is renewed.
    static let renewEvery: Duration = .milliseconds(500)
    /// How long after (re)starting to listen a replica answers nothing from memory: an announcement made before it
    /// listened resolves within ``SessionMemory/markLifetime``.
    static let warmUp: Duration = .milliseconds(5_500)
    /// A change must commit within this of its announcement, or it rolls back and is announced again: the replicas
    /// keep a mark ``SessionMemory/markLifetime`` (5 s) from hearing it.
    static let commitWithin: Duration = .milliseconds(4_500)
    /// How long a change waits for acknowledgements before it announces itself again.
    static let ackWait: Duration = .seconds(4)

    let role: SessionCacheRole
    /// The memory of an answering replica.
    let memory: SessionMemory?
    /// The checks reading the database now and those waiting to read together.
    let reads = SessionReads()
    /// This process, as the origin of its announcements.
    let processID: String
    let connect: @Sendable () async throws -> PostgresConnection
    let logger: Logger
    private let hits: Counter
    private let misses: Counter
    let invalidations: Counter
    private let endWait: Metrics.Timer
    let state = Mutex(State())

    struct State {
        /// The listener's task, once started.
        var listener: Task<Void, Never>?
        /// The registration the listener holds (answering replicas), changed at every reconnection.
        var registration: String?
        /// Whether the listener is listening now.
        var listening = false
        /// Changes this process announced and waits on, with the events that wake them.
        var waiters: [String: AsyncStream<String>.Continuation] = [:]
        /// Callers waiting for the listener to listen.
        var ready: [UUID: CheckedContinuation<Void, Never>] = [:]
    }

    init(
        role: SessionCacheRole,
        connect: @escaping @Sendable () async throws -> PostgresConnection,
        metrics: any MetricsFactory,
        logger: Logger
    ) {
        self.role = role
        self.memory = role == .answering ? SessionMemory() : nil
        self.processID = SystemRandomSource().id("p")
        self.connect = connect
        self.logger = logger
        self.hits = Counter(label: "orchard_session_cache_hits_total", factory: metrics)
        self.misses = Counter(label: "orchard_session_cache_misses_total", factory: metrics)
        self.invalidations = Counter(label: "orchard_session_cache_invalidations_total", factory: metrics)
        self.endWait = Metrics.Timer(label: "orchard_session_end_wait_seconds", preferredDisplayUnit: .seconds, factory: metrics)
    }

    // MARK: Reads

    /// The session behind `tokenHash`: from memory when `mayRemember` and this replica may answer for it, else from
    /// `read` with the checks that arrive while others read (``SessionReads``), remembered.
    func session(
        tokenHash: String,
        mayRemember: Bool,
        read: ([String]) async throws -> [SessionWithAccount]
    ) async throws -> SessionWithAccount? {
        guard mayRemember, let memory else { return try await reads.session(tokenHash: tokenHash, read: read) }
        startListening()
        if let remembered = memory.lookup(tokenHash) {
            hits.increment()
            return remembered
        }
        misses.increment()
        let epoch = memory.epoch
        let value = try await reads.session(tokenHash: tokenHash, read: read)
        if let value { memory.remember(tokenHash, value, readAt: epoch) }
        return value
    }

    /// An account's shown fields changed here: this replica forgets its sessions at once (the others within
    /// ``SessionMemory/entryLifetime``).
    func changed(account accountID: String) {
        memory?.forget(account: accountID)
    }

    // MARK: Changes that end sessions

    /// Runs `change` (a transaction that ends `target`'s sessions) after every answering replica has stopped answering
    /// for them, and announces its outcome.
    func ending<T: Sendable>(
        _ target: SessionEndTarget,
        announce: @Sendable (SQLQueryString) async throws -> [any SQLRow],
        transaction: (@Sendable (any SQLDatabase) async throws -> T) async throws -> T,
        _ change: @escaping @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        guard role != .none else { return try await transaction(change) }
        for _ in 0..<3 {
            let changeID = SystemRandomSource().id("c")
            let announced = ContinuousClock.now
            if memory?.mark(changeID, target) != nil { invalidations.increment() }
            let (events, wake) = AsyncStream.makeStream(of: String.self)
            state.withLock { $0.waiters[changeID] = wake }
            defer { _ = state.withLock { $0.waiters.removeValue(forKey: changeID) } }
            let listening = state.withLock { $0.listening }
            let message = "E|\(changeID)|\(processID)|" + Self.encode(target)
            let registration = state.withLock { $0.registration } ?? ""
            var waitingOn = Set(
                try await announce(
                    """
                    SELECT id FROM session_cache_replicas
                    WHERE lease_until > \(unsafeRaw: Self.databaseNow) AND id <> \(bind: registration)
                    UNION ALL SELECT NULL FROM (SELECT pg_notify(\(bind: Self.channel), \(bind: message))) AS announced
                    """
                ).compactMap { try $0.decodeNil(column: "id") ? nil : try $0.decode(column: "id", as: String.self) }
            )
            if !waitingOn.isEmpty && !listening {
                // Acknowledgements may have gone unheard: listen, then announce again.
                startListening()
                await waitUntilListening()
                continue
            }
            if !waitingOn.isEmpty {
                let ticker = Task {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(200))
                        wake.yield("")
                    }
                }
                defer { ticker.cancel() }
                for await replica in events {
                    waitingOn.remove(replica)
                    if replica.isEmpty, !waitingOn.isEmpty {
                        // A replica that stopped renewing no longer holds the change up once its lease has passed.
                        let current = Set(
                            try await announce(
                                """
                                SELECT id FROM session_cache_replicas
                                WHERE lease_until > \(unsafeRaw: Self.databaseNow) AND id IN (\(binds: Array(waitingOn)))
                                """
                            ).map { try $0.decode(column: "id", as: String.self) }
                        )
                        waitingOn.formIntersection(current)
                    }
                    if waitingOn.isEmpty || ContinuousClock.now - announced > Self.ackWait { break }
                }
                guard waitingOn.isEmpty else {
                    logger.warning(
                        "replicas did not acknowledge a session end in time; announcing it again",
                        metadata: ["replicas": "\(waitingOn.count)"]
                    )
                    continue
                }
            }
            endWait.recordNanoseconds(Int64((ContinuousClock.now - announced).nanoseconds))
            let result: T
            do {
                result = try await transaction { db in
                    let result = try await change(db)
                    guard ContinuousClock.now - announced < Self.commitWithin else { throw LateCommit() }
                    return result
                }
            } catch is LateCommit {
                continue
            }
            memory?.resolve(changeID)
            _ = try? await announce("SELECT pg_notify(\(bind: Self.channel), \(bind: "D|" + changeID)) AS sent")
            return result
        }
        throw StoreError.unavailable("the replicas did not acknowledge the end of a session")
    }

    /// A change past ``commitWithin`` rolls back.
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

extension Duration {
    /// The duration in whole nanoseconds.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
