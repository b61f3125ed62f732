import AppleID
import Dispatch
import Foundation
import Logging
import OrchardServer
import ServiceLifecycle
import Synchronization

/// Ends `serve` when its graceful shutdown cannot. It is told of a SIGTERM or SIGINT before every other service and
/// gives the rest ORCHARD_SHUTDOWN_GRACE plus ``cancellation`` to finish; past that it logs an error and exits 0, as the
/// contract's shutdown says. Without it, a task that ignores cancellation keeps serve from exiting: a query sent to a
/// PostgreSQL server that stopped answering, which PostgresNIO cannot take back, holds serve until `ServiceGroup`'s own
/// limit crashes it.
struct ShutdownDeadline: Service, CustomStringConvertible {
    /// How long after the grace the cancelled tasks and the database's closing may take.
    static let cancellation = Duration.seconds(5)

    let grace: Duration
    let logger: Logger
    /// Set once a SIGTERM or SIGINT has come.
    let signal: ShutdownSignal
    /// The services still running when the limit passes are named in the error.
    let roster: ServiceRoster

    /// Its grace (a service group logs each service's description).
    var description: String { "ShutdownDeadline(grace: \(grace))" }

    func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            return  // Cancelled: the group ends for another reason, and its own limit applies.
        }
        signal.received()
        let logger = self.logger
        let roster = self.roster
        let limit = grace + Self.cancellation
        // A dispatch timer, not a task: it must fire even when the tasks that hold serve up hold its executors too.
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(limit.nanoseconds))) {
            logger.error(
                "shutdown did not finish in time: exiting with work left (a database that stopped answering?)",
                metadata: [
                    "shutdown.limit_seconds": "\(limit.components.seconds)",
                    "shutdown.still_running": "\(roster.stillRunning.joined(separator: ","))",
                ]
            )
            fflush(nil)
            _exit(0)
        }
    }
}

/// Whether `serve` was told to stop: after that, it exits 0 whatever its services end with (the contract's shutdown).
final class ShutdownSignal: Sendable {
    private let state = Atomic(false)

    /// A SIGTERM or SIGINT has come.
    func received() { state.store(true, ordering: .sequentiallyConsistent) }

    /// Whether one has.
    var hasCome: Bool { state.load(ordering: .sequentiallyConsistent) }
}
