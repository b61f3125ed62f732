import AppleID
import Foundation

/// What the handler decides: the policy it decides by, and the decision for one event about one account.
extension NotificationHandler {
    /// What the handler decides by.
    public struct Policy: Sendable {
        /// What `consent-revoked` does.
        public var consentRevoked: ConsentRevokedPolicy
        /// How far an event may predate the account or its latest grant and still be acted on.
        public var clockLeeway: Duration
    }

    /// What a notification does to an account, decided on what was read; the change re-checks the grant in its own
    /// statement, against a sign-in that commits meanwhile.
    enum Decision: Equatable {
        /// Recorded with this outcome and not acted on.
        case ignore(InboxOutcome.Kind)
        /// Apple's email forwarding changed.
        case setEmailForwarding(EmailForwarding, ChangeCondition)
        /// Sessions end, the credential is revoked (`consent-revoked` under `sign-out`).
        case revokeCredential(ChangeCondition)
        /// The account goes, without a revocation (Apple ended the grant).
        case delete(DeletionReason, ChangeCondition)
    }

    /// The decision for `event` about `account` under `policy`.
    ///
    /// Late notifications: an event that happened before the account existed, or before its latest grant (the user
    /// signed up or authorized the app again after it), is about an earlier grant and must not touch the newer one.
    static func decide(_ event: AppleNotificationEvent, about account: AccountRecord, policy: Policy) -> Decision {
        let leeway = policy.clockLeeway.seconds
        if event.eventTime < account.createdAt.addingTimeInterval(-leeway) { return .ignore(.predatesAccount) }
        if event.eventTime < account.latestGrant.addingTimeInterval(-leeway) { return .ignore(.predatesGrant) }
        let condition = ChangeCondition.grantedNoLaterThan(event.eventTime.addingTimeInterval(leeway))
        switch event.type {
        case .emailEnabled: return .setEmailForwarding(.enabled, condition)
        case .emailDisabled: return .setEmailForwarding(.disabled, condition)
        case .consentRevoked:
            return policy.consentRevoked == .signOut ? .revokeCredential(condition) : .delete(.consentRevoked, condition)
        case .accountDelete: return .delete(.appleAccountDeleted, condition)
        case .unknown: return .ignore(.unknownType)
        }
    }
}
