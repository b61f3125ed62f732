import Accounts
import OrchardServer
import Synchronization

/// Carries the lifecycle and the jobs `buildApplication` made out of the closure that starts the server.
final class BuiltHolder: Sendable {
    private let value = Mutex<(Lifecycle, JobService)?>(nil)

    func set(_ lifecycle: Lifecycle, _ jobs: JobService) { value.withLock { $0 = (lifecycle, jobs) } }
    func get() -> (Lifecycle, JobService)? { value.withLock { $0 } }
}
