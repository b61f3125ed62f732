import Accounts
import AppleID
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresKit
import PostgresNIO
import SQLKit
import Synchronization
import _ConnectionPoolModule

/// The operation deadline of ``PostgresDatabaseClient``, and which of the driver's errors are an outage.
extension PostgresDatabaseClient {
    /// Runs `work` on a pooled connection within the operation deadline, mapping connection failures to
    /// ``Accounts/StoreError/unavailable(_:)``.
    ///
    /// The work runs in a task of its own that a timer on an event loop cancels at the deadline, so the caller's task is
    /// never cancelled and can still answer. A waiting lease ends on cancellation; a query already sent does not (a
    /// server that stopped answering would hold the request for good), so the timer also closes the connection it runs
    /// on, which fails the query; the pool opens another. One lock orders the lease, the timer and the release (see
    /// ``Attempt``). The caller is answered at the deadline whatever the work does then (``FirstOutcome``): a lease or
    /// a query that did not end on its cancellation would otherwise hold the request for good. Not a task group racing
    /// the work against `Task.sleep`: that makes two child tasks per statement and leaves a dispatch timer pending for
    /// the whole deadline after every one. `Benchmarks/run`'s PostgreSQL figures guard this.
    func bounded<T: Sendable>(_ work: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let client = self.client
        guard let operationDeadline else {
            return try await Self.mappingUnavailability(expired: { false }, { try await client.withConnection(work) })
        }
        let attempt = Mutex(Attempt.waiting)
        let outcome = FirstOutcome<T>()
        let task = Task {
            do {
                outcome.settle(.success(try await Self.leased(client, attempt, work)))
            } catch {
                outcome.settle(.failure(error))
            }
        }
        let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: operationDeadline.timeAmount) {
            let connection = attempt.withLock { state -> PostgresConnection? in
                switch state {
                case .waiting:
                    state = .expired
                    return nil
                case .leased(let connection):
                    state = .closing(connection)
                    return connection
                case .expired, .closing, .released:
                    return nil
                }
            }
            task.cancel()
            // Still this attempt's: the task hands it back only after seeing `.closing`, and then only once closed.
            let closed: EventLoopFuture<Void>? = connection?.close()
            _ = closed
            outcome.settle(.failure(Self.timedOut))
        }
        defer { timer.cancel() }
        let awaited: () async throws -> T = {
            try await withTaskCancellationHandler {
                try await outcome.value()
            } onCancel: {
                task.cancel()
            }
        }
        return try await Self.mappingUnavailability(expired: { attempt.withLock { $0.isExpired } }, awaited)
    }

    /// `work` on a connection of `client`'s pool, unless the deadline passed before the lease; the connection goes back
    /// closed when the deadline closed it.
    private static func leased<T: Sendable>(
        _ client: PostgresClient,
        _ attempt: borrowing Mutex<Attempt>,
        _ work: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await client.withConnection { connection in
            let granted = attempt.withLock { state in
                guard case .waiting = state else { return false }
                state = .leased(connection)
                return true
            }
            // A lease granted after the deadline: the work is not started on it.
            guard granted else { throw Self.timedOut }
            let result: Result<T, any Error>
            do {
                result = .success(try await work(connection))
            } catch {
                result = .failure(error)
            }
            let closing = attempt.withLock { state in
                guard case .closing = state else {
                    state = .released
                    return false
                }
                return true
            }
            // Handed back to the pool only once closed, so that the pool has dropped it: handed back while closing,
            // it would go to the next request, which would fail on it. The same when the server closed it.
            var failed: Bool {
                guard case .failure = result else { return false }
                return true
            }
            if closing || (failed && connection.isClosed) { try? await connection.closeFuture.get() }
            return try result.get()
        }
    }

    /// What an operation past its deadline answers.
    private static let timedOut = StoreError.unavailable("PostgreSQL did not answer in time")

    /// Where one bounded operation stands, changed only under its lock: the lease, the timer and the release each move
    /// it on, so the timer closes a connection only while this operation holds it, and a lease granted after the
    /// deadline is not used.
    private enum Attempt: Sendable {
        /// Waiting for a lease.
        case waiting
        /// Working on a leased connection.
        case leased(PostgresConnection)
        /// The deadline passed before a lease.
        case expired
        /// The deadline passed during the work: the connection is being closed, and goes back to the pool once closed.
        case closing(PostgresConnection)
        /// Done, and the connection handed back.
        case released

        var isExpired: Bool {
            switch self {
            case .expired, .closing: true
            case .waiting, .leased, .released: false
            }
        }
    }

    /// `work`'s result, with the driver's outage errors, and any error once `expired()`, as
    /// ``Accounts/StoreError/unavailable(_:)``.
    private static func mappingUnavailability<T: Sendable>(
        expired: () -> Bool,
        _ work: () async throws -> T
    ) async throws -> T {
        do {
            return try await work()
        } catch let error as StoreError {
            throw error
        } catch  where expired() {
            throw timedOut
        } catch let error as PSQLError {
            if isUnavailability(error) {
                let state = error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                throw StoreError.unavailable("PostgreSQL: \(error.code)\(state)")
            }
            throw error
        } catch let error as _ConnectionPoolModule.ConnectionPoolError {
            // After failing to connect for a while, the pool's circuit breaker refuses requests at once: still an
            // outage (503), not a fault of Orchard's (500).
            throw StoreError.unavailable("PostgreSQL: the connection pool cannot connect (\(error))")
        }
    }

    private static func isUnavailability(_ error: PSQLError) -> Bool {
        switch error.code {
        case .server:
            // Class 08: connection exception; 57P0x: shutdown; 53xxx: insufficient resources; 57014: cancelled by the
            // server, as a `statement_timeout` set for Orchard's role does (docs/operations.md).
            let state = error.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53") || state == "57014"
        default:
            return true
        }
    }
}
