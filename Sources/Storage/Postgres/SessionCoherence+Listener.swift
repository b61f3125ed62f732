import Accounts
import Foundation
import Logging
import Metrics
import PostgresNIO
import Synchronization

/// The listener of ``SessionCoherence``: one connection of its own that listens on the channel, registers this replica
/// and renews its lease, and hears and acknowledges the others' announcements.
extension SessionCoherence {
    /// Starts the listener once.
    func startListening() {
        guard role != .none else { return }
        state.withLock { state in
            guard state.listener == nil else { return }
            state.listener = Task { await self.listen() }
        }
    }

    /// Waits until the listener listens (or a few seconds have passed).
    func waitUntilListening() async {
        let id = UUID()
        let timeout = Task {
            try? await Task.sleep(for: .seconds(5))
            self.state.withLock { $0.ready.removeValue(forKey: id) }?.resume()
        }
        defer { timeout.cancel() }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.listening { return true }
                state.ready[id] = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Stops the listener and withdraws the registration.
    func stop() async {
        let task = state.withLock { state -> Task<Void, Never>? in
            defer { state.listener = nil }
            return state.listener
        }
        task?.cancel()
        await task?.value
    }

    /// Connects, listens, registers and renews, and hears the others' messages, until stopped; reconnects after a
    /// failure. While it is not listening, this replica's memory answers nothing.
    private func listen() async {
        while !Task.isCancelled {
            do {
                let connection = try await connect()
                do {
                    try await session(on: connection)
                } catch {
                    if !Task.isCancelled { logger.warning("the session listener lost its connection", metadata: ["error": "\(error)"]) }
                }
                try? await connection.close()
            } catch {
                if !Task.isCancelled { logger.debug("the session listener cannot connect", metadata: ["error": "\(error)"]) }
            }
            memory?.revoke()
            state.withLock { state in
                state.listening = false
                state.registration = nil
            }
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    /// One connection's life: listen, then renew and hear until it fails or the task is cancelled.
    private func session(on connection: PostgresConnection) async throws {
        try await connection.listen(on: Self.channel) { notifications in
            let registration = role == .answering ? SystemRandomSource().id("r") : nil
            let ready = state.withLock { state in
                state.listening = true
                state.registration = registration
                defer { state.ready.removeAll() }
                return Array(state.ready.values)
            }
            for continuation in ready { continuation.resume() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                if let registration {
                    group.addTask { try await self.renew(registration, on: connection) }
                    // A database that stops answering holds a renewal, and the connection, forever: past a lease
                    // without one, the connection is closed, which fails what waits on it, and the listener reconnects.
                    let started = ContinuousClock.now
                    group.addTask {
                        while true {
                            try await Task.sleep(for: Self.renewEvery)
                            let last = self.memory?.lastRenewal ?? started
                            if ContinuousClock.now - last > Self.lease + Self.renewEvery {
                                try? await connection.close()
                                throw StoreError.unavailable("the session listener's renewals stopped")
                            }
                        }
                    }
                }
                group.addTask {
                    for try await notification in notifications {
                        try await self.hear(notification.payload, registration: registration, on: connection)
                    }
                    throw CancellationError()
                }
                defer { group.cancelAll() }
                try await group.next()
            }
        }
    }

    /// Renews the registration every half second; each renewal that returns in time permits the memory for a lease
    /// counted from before it was sent. Withdraws it when cancelled.
    private func renew(_ registration: String, on connection: PostgresConnection) async throws {
        var renewals = 0
        do {
            while true {
                try Task.checkCancellation()
                let sent = ContinuousClock.now
                try connection.ensureOpen()
                let lease = Int64(Self.lease.nanoseconds / 1_000_000)
                _ = try await connection.query(
                    """
                    INSERT INTO session_cache_replicas (id, lease_until)
                    VALUES (\(registration), (extract(epoch from clock_timestamp()) * 1000)::bigint + \(lease))
                    ON CONFLICT (id) DO UPDATE SET lease_until = EXCLUDED.lease_until
                    """,
                    logger: logger
                )
                memory?.renewed(sentAt: sent, lease: Self.lease, warmUp: Self.warmUp)
                renewals += 1
                if renewals % 120 == 1 {
                    // Registrations of replicas that died long ago.
                    try connection.ensureOpen()
                    _ = try await connection.query(
                        "DELETE FROM session_cache_replicas WHERE lease_until < (extract(epoch from clock_timestamp()) * 1000)::bigint - 3600000",
                        logger: logger
                    )
                }
                try await Task.sleep(until: sent + Self.renewEvery)
            }
        } catch {
            if Task.isCancelled, !connection.isClosed {
                // Stopping: withdrawn at once rather than left to lapse, so that no change waits for it.
                _ = try? await connection.query("DELETE FROM session_cache_replicas WHERE id = \(registration)", logger: logger)
            }
            throw error
        }
    }

    /// One message of the channel.
    private func hear(_ payload: String, registration: String?, on connection: PostgresConnection) async throws {
        let parts = payload.split(separator: "|", omittingEmptySubsequences: false)
        switch parts.first {
        case "E" where parts.count == 5:
            guard parts[2] != processID, let target = Self.decode(parts[3], parts[4]) else { return }
            guard let memory, let registration else { return }
            memory.mark(String(parts[1]), target)
            invalidations.increment()
            let ack = "A|\(parts[1])|\(registration)"
            try connection.ensureOpen()
            _ = try await connection.query("SELECT pg_notify(\(Self.channel), \(ack))", logger: logger)
        case "A" where parts.count == 3:
            let waiter = state.withLock { $0.waiters[String(parts[1])] }
            waiter?.yield(String(parts[2]))
        case "D" where parts.count == 2:
            memory?.resolve(String(parts[1]))
        default:
            return
        }
    }
}
