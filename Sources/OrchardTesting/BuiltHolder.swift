import Accounts
import Synchronization

/// Carries the lifecycle object out of the builder closure of ``RunningService/start(_:)``.
final class BuiltHolder: Sendable {
    private let value = Mutex<Accounts?>(nil)

    func set(_ accounts: Accounts) { value.withLock { $0 = accounts } }
    func get() -> Accounts? { value.withLock { $0 } }
}
