import Accounts
import Synchronization

/// Carries the lifecycle object out of the builder closure of ``RunningService/start(_:)``.
final class BuiltHolder: Sendable {
    private let value = Mutex<Lifecycle?>(nil)

    func set(_ lifecycle: Lifecycle) { value.withLock { $0 = lifecycle } }
    func get() -> Lifecycle? { value.withLock { $0 } }
}
