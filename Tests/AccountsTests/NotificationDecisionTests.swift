import Accounts
import AppleID
import Foundation
import OrchardTesting
import Testing

/// What Apple's notifications do to an account, decided by the lifecycle over the in-memory store.
@Suite("Notification decisions: policies, late events, the latest grant")
struct NotificationDecisionTests {
    @Test("consent-revoked under sign-out ends the sessions and revokes the credential; the account stays")
    func consentRevokedSignOut() async throws {
        let f = LifecycleFixture(policy: .signOut)
        try f.account("ada")
        let jti = try f.notification(.consentRevoked, about: "ada", at: f.clock.now())
        #expect(await f.processNotifications() == 1)
        #expect(f.outcome(jti) == .processed)
        #expect(f.endReason("ada") == .appleCredentialRevoked)
        #expect(f.store.snapshot.accounts["acct_ada"]?.appleCredential == .revoked)
        #expect(f.webhookTypes == ["account.credential_revoked"])
        #expect(f.store.snapshot.revocations.isEmpty, "Apple already invalidated the tokens: nothing to revoke")
    }

    @Test("consent-revoked under delete deletes the account, keeps the audit record, and revokes nothing")
    func consentRevokedDelete() async throws {
        let f = LifecycleFixture(policy: .delete)
        try f.account("ada")
        let jti = try f.notification(.consentRevoked, about: "ada", at: f.clock.now())
        await f.processNotifications()
        #expect(f.outcome(jti) == .processed)
        #expect(f.store.snapshot.accounts.isEmpty)
        #expect(f.endReason("ada") == .accountDeleted)
        #expect(f.store.snapshot.audit.map(\.reason) == ["consent_revoked"])
        #expect(f.webhookTypes == ["account.deleted"])
        #expect(f.store.snapshot.revocations.isEmpty)
    }

    @Test("email-disabled and email-enabled set the forwarding; account-delete deletes; an unknown subject is recorded")
    func otherTypes() async throws {
        let f = LifecycleFixture()
        try f.account("ada")
        try f.notification(.emailDisabled, about: "ada", at: f.clock.now())
        await f.processNotifications()
        #expect(f.store.snapshot.accounts["acct_ada"]?.emailForwarding == .disabled)
        #expect(f.endReason("ada") == nil)
        let unknown = try f.notification(.accountDelete, about: "nobody", at: f.clock.now())
        let deleted = try f.notification(.accountDelete, about: "ada", at: f.clock.now())
        await f.processNotifications()
        #expect(f.outcome(unknown) == .unknownSubject)
        #expect(f.outcome(deleted) == .processed)
        #expect(f.store.snapshot.audit.map(\.reason) == ["apple_account_deleted"])
    }

    @Test(
        "an event older than the account, or than its latest grant, by more than the leeway is recorded and not acted on",
        arguments: [ConsentRevokedPolicy.signOut, .delete]
    )
    func lateEvents(_ policy: ConsentRevokedPolicy) async throws {
        let f = LifecycleFixture(policy: policy)
        let created = f.clock.now()
        try f.account("ada", grantedAt: created.addingTimeInterval(600))
        let beforeAccount = try f.notification(.consentRevoked, about: "ada", at: created.addingTimeInterval(-61))
        let beforeGrant = try f.notification(.consentRevoked, about: "ada", at: created.addingTimeInterval(600 - 61))
        await f.processNotifications()
        #expect(f.outcome(beforeAccount) == .predatesAccount)
        #expect(f.outcome(beforeGrant) == .predatesGrant)
        #expect(f.endReason("ada") == nil)
        #expect(f.store.snapshot.accounts["acct_ada"]?.appleCredential == .valid)
        #expect(f.webhookTypes.isEmpty)
        // Within the leeway of the latest grant, the event is acted on.
        let onTime = try f.notification(.consentRevoked, about: "ada", at: created.addingTimeInterval(600 - 59))
        await f.processNotifications()
        #expect(f.outcome(onTime) == .processed)
        #expect(f.endReason("ada") != nil)
    }

    @Test("a grant that commits after the decision wins: the change's condition leaves the account as the new grant left it")
    func grantAfterDecision() async throws {
        let f = LifecycleFixture()
        let account = try f.account("ada")
        let decidedAt = f.clock.now()
        // The user authorizes the app again between the handler's read and its change.
        f.store.edit { $0.accounts["acct_ada"]?.grantedAt = decidedAt.addingTimeInterval(300) }
        let outcome = try await f.lifecycle.changes.revokeCredential(
            accountID: account.id,
            reason: .consentRevoked,
            completesNotification: nil,
            condition: .grantedNoLaterThan(decidedAt.addingTimeInterval(60)),
            at: decidedAt
        )
        #expect(outcome == .superseded)
        #expect(f.endReason("ada") == nil)
        #expect(f.webhookTypes.isEmpty)
    }
}
