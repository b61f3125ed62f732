import Accounts
import AppleID
import Foundation
import Logging
import Metrics
import PostgresNIO
import SQLKit
import Synchronization

/// The listening side of ``ReplicaChannel``: one connection of its own that listens on the channel, proves that it hears
/// (its own `NOTIFY`, sent over the pool), registers this replica and renews its lease, and hears and acknowledges the
/// other replicas' announcements. ``ReplicaListener`` runs it in `serve`'s service group.
extension ReplicaChannel {
    /// Connects, listens, proves it hears, registers and renews, until cancelled; connects again after a failure. While
    /// it does not hear, this replica's memory answers nothing and the session checks read the database.
    func listen(selfTestOver database: any DatabaseClient) async {
        while !Task.isCancelled {
            do {
                let connection = try await connect()
                do {
                    try await session(on: connection, selfTestOver: database)
                } catch {
                    if !Task.isCancelled { logger.warning("the session listener lost its connection", metadata: ["error": "\(error)"]) }
                }
                try? await connection.close()
            } catch {
                if !Task.isCancelled { logger.debug("the session listener cannot connect", metadata: ["error": "\(error)"]) }
            }
            memory?.revoke()
            enabled.record(0)
            state.withLock { state in
                state.hearing = false
                state.registration = nil
            }
            try? await clock.sleep(for: timings.reconnectDelay)
        }
    }

    /// One connection's life: listen; hear its own `NOTIFY` or say loudly that it cannot; then renew and hear until it
    /// fails or the task is cancelled.
    private func session(on connection: PostgresConnection, selfTestOver database: any DatabaseClient) async throws {
        try await connection.listen(on: Self.channel) { notifications in
            let registration = answering ? SystemRandomSource().id("r") : nil
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await notification in notifications {
                        try await self.hear(notification.payload, registration: registration, on: connection)
                    }
                    throw CancellationError()
                }
                guard await selfTest(over: database) else {
                    logger.error(
                        """
                        the session listener does not hear its own NOTIFY: session checks are answered from the database, \
                        not from memory. ORCHARD_DATABASE_LISTEN_URL must reach PostgreSQL directly or through a \
                        session-pooling proxy, never a transaction-pooling one (which drops LISTEN)
                        """
                    )
                    // Tried again after a reconnection, a while from now.
                    try await clock.sleep(for: timings.deafRetry)
                    throw StoreError.unavailable("the session listener hears nothing")
                }
                state.withLock { state in
                    state.hearing = true
                    state.registration = registration
                }
                if let registration {
                    enabled.record(1)
                    group.addTask { try await self.renew(registration, on: connection) }
                    // A database that stops answering holds a renewal, and the connection, forever: past a lease
                    // without one, the connection is closed, which fails what waits on it, and the listener reconnects.
                    let started = clock.now
                    group.addTask {
                        while true {
                            try await self.clock.sleep(for: self.timings.renewEvery)
                            let last = self.memory?.lastRenewal ?? started
                            if self.clock.now - last > self.timings.lease + self.timings.renewEvery {
                                try? await connection.close()
                                throw StoreError.unavailable("the session listener's renewals stopped")
                            }
                        }
                    }
                }
                defer { group.cancelAll() }
                try await group.next()
            }
        }
    }

    /// Sends `T|token` over one of the pool's connections and waits up to ``SessionTimings/selfTest`` to hear it on the
    /// listener: a transaction-pooling proxy in front of the listener swallows `LISTEN` without an error.
    private func selfTest(over database: any DatabaseClient) async -> Bool {
        let token = SystemRandomSource().id("t")
        let (heard, wake) = AsyncStream.makeStream(of: Void.self)
        state.withLock { $0.selfTests[token] = wake }
        defer { _ = state.withLock { $0.selfTests.removeValue(forKey: token) } }
        do {
            _ = try await database.read("SELECT pg_notify(\(bind: Self.channel), \(bind: "T|" + token)) AS sent")
        } catch {
            return false
        }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in heard { return true }
                return false
            }
            group.addTask {
                try? await self.clock.sleep(for: self.timings.selfTest)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            wake.finish()
            return first
        }
    }

    /// Renews the registration every ``SessionTimings/renewEvery``; each renewal that returns in time permits the memory
    /// for a lease counted from before it was sent. Withdraws it when cancelled.
    private func renew(_ registration: String, on connection: PostgresConnection) async throws {
        var renewals = 0
        do {
            while true {
                try Task.checkCancellation()
                let sent = clock.now
                try connection.ensureOpen()
                let lease = Int64(timings.lease.nanoseconds / 1_000_000)
                _ = try await connection.query(
                    """
                    INSERT INTO session_cache_replicas (id, lease_until)
                    VALUES (\(registration), (extract(epoch from clock_timestamp()) * 1000)::bigint + \(lease))
                    ON CONFLICT (id) DO UPDATE SET lease_until = EXCLUDED.lease_until
                    """,
                    logger: logger
                )
                memory?.renewed(sentAt: sent)
                renewals += 1
                if renewals % 120 == 1 {
                    // Registrations of replicas that died long ago.
                    try connection.ensureOpen()
                    _ = try await connection.query(
                        "DELETE FROM session_cache_replicas WHERE lease_until < (extract(epoch from clock_timestamp()) * 1000)::bigint - 3600000",
                        logger: logger
                    )
                }
                try await clock.sleep(until: sent + timings.renewEvery)
            }
        } catch {
            if Task.isCancelled, !connection.isClosed {
                // Stopping: withdrawn at once rather than left to lapse, so that no change waits for it.
                _ = try? await connection.query("DELETE FROM session_cache_replicas WHERE id = \(registration)", logger: logger)
            }
            throw error
        }
    }

    /// One message of the channel. `connection` acknowledges (an answering replica's listener); without it, this
    /// process only hears acknowledgements and outcomes.
    func hear(_ payload: String, registration: String?, on connection: PostgresConnection?) async throws {
        let parts = payload.split(separator: "|", omittingEmptySubsequences: false)
        switch parts.first {
        case "E" where parts.count == 5:
            guard parts[2] != processID, let target = Self.decode(parts[3], parts[4]) else { return }
            guard let memory, let registration, let connection else { return }
            memory.mark(String(parts[1]), target)
            invalidations.increment()
            let ack = "A|\(parts[1])|\(registration)"
            try connection.ensureOpen()
            _ = try await connection.query("SELECT pg_notify(\(Self.channel), \(ack))", logger: logger)
        case "A" where parts.count == 3:
            let waiter = state.withLock { $0.waiters[String(parts[1])] }
            waiter?.yield(String(parts[2]))
        case "D" where parts.count == 4:
            memory?.resolve(String(parts[1]), ending: Self.decode(parts[2], parts[3]))
        case "T" where parts.count == 2:
            let waiter = state.withLock { $0.selfTests[String(parts[1])] }
            waiter?.yield()
        default:
            return
        }
    }
}
