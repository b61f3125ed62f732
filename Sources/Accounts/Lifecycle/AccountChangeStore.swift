public import Foundation

/// The storage an account change needs: the installation's audit salt, and applying a change with everything it leaves
/// behind in one transaction.
public protocol AccountChangeStore: Sendable {
    /// The installation's salt for the audit hash of subjects (made at the first migration).
    func auditSalt() async throws -> String
    /// Applies a change in one transaction; nothing is written when the account no longer exists or no longer meets
    /// the change's condition.
    func apply(_ change: AccountChange) async throws -> AccountChangeOutcome
}
