import Foundation

/// The storage an account change needs: the installation's audit salt, and applying a change with everything it leaves
/// behind in one transaction.
public protocol AccountChangeStore: Sendable {
    /// The installation's salt for the audit hash of subjects (made at the first migration).
    func auditSalt() async throws -> String
    /// Applies a change in one transaction; nothing is written when the account no longer exists or no longer meets
    /// the change's condition.
    func apply(_ change: AccountChange) async throws -> AccountChangeOutcome
    /// Applies email-forwarding changes of different accounts, each completing its notification, in one transaction of
    /// a few statements, whatever their count: a change applies only while its notification is unprocessed and its
    /// account meets its condition. Outcomes in the changes' order (`.gone` too for a notification processed already).
    func applyForwardingChanges(_ changes: [AccountChange]) async throws -> [AccountChangeOutcome]
}
