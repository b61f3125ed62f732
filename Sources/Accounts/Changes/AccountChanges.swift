import AppleID
public import Foundation
public import Logging
import Metrics

/// The changes the lifecycle makes to an account after its sign-in: Apple's email forwarding, a credential Apple
/// ended, and the one deletion. Each is one transaction of the store's (``AccountChangeStore``) with its webhooks, its
/// audit record and its inbox mark; each may carry a ``ChangeCondition`` that the store checks in the change's own
/// statement. The coordinator (``AccountDesk``), the notification handler and the validation handler all change accounts
/// here.
public struct AccountChanges: Sendable {
    /// What became of a deletion.
    public enum DeletionOutcome: Sendable {
        /// The account is gone, with what became of the revocation.
        case deleted(DeletionResult)
        /// It was already gone.
        case gone
        /// It no longer meets the deletion's condition (a late notification): nothing was deleted.
        case superseded
    }

    let store: any AccountChangeStore
    let vault: TokenVault
    let clock: any WallClock
    let random: any RandomSource
    let webhooks: WebhookFanout
    let audit: AuditDigests
    let metrics: any MetricsFactory
    let wakeups: JobWakeups
    let engine: JobEngine
    /// Runs a deletion's own revocation, with the request's wait for Apple as its deadline.
    let revocations: RevocationHandler

    /// Sets Apple's email forwarding, with `account.email_forwarding_changed`, if the account still meets `condition`.
    public func setEmailForwarding(
        accountID: String,
        _ forwarding: EmailForwarding,
        completesNotification: String?,
        condition: ChangeCondition?,
        at now: Date
    ) async throws -> AccountChangeOutcome {
        try await apply(forwardingChange(accountID, forwarding, completesNotification, condition, at: now))
    }

    /// Sets the email forwarding of several accounts, each completing its notification, in one transaction; an
    /// account that no longer meets its condition is left alone. Outcomes in the order given.
    public func setEmailForwarding(
        _ changes: [(accountID: String, forwarding: EmailForwarding, completesNotification: String, condition: ChangeCondition)],
        at now: Date
    ) async throws -> [AccountChangeOutcome] {
        let outcomes = try await store.applyForwardingChanges(
            changes.map { forwardingChange($0.accountID, $0.forwarding, $0.completesNotification, $0.condition, at: now) }
        )
        if outcomes.contains(where: { if case .applied = $0 { true } else { false } }) { wakeups.notify(.webhooks) }
        return outcomes
    }

    /// An email forwarding change with its webhooks and history.
    private func forwardingChange(
        _ accountID: String,
        _ forwarding: EmailForwarding,
        _ completesNotification: String?,
        _ condition: ChangeCondition?,
        at now: Date
    ) -> AccountChange {
        AccountChange(
            accountID: accountID,
            action: .setEmailForwarding(forwarding),
            webhooks: webhooks.deliveries(.emailForwardingChanged, accountID: accountID, at: now, emailForwarding: forwarding),
            history: [forwardingEvent(accountID: accountID, forwarding, at: now)],
            completesNotification: completesNotification,
            condition: condition,
            at: now
        )
    }

    /// Ends every session of an account and marks its Apple credential revoked, with `account.credential_revoked`, if
    /// the account still meets `condition` when the change commits.
    public func revokeCredential(
        accountID: String,
        reason: CredentialRevocationReason,
        completesNotification: String?,
        condition: ChangeCondition?,
        at now: Date
    ) async throws -> AccountChangeOutcome {
        try await apply(
            AccountChange(
                accountID: accountID,
                action: .revokeCredential,
                webhooks: webhooks.deliveries(.credentialRevoked, accountID: accountID, at: now, reason: reason.rawValue),
                history: revocationEvents(accountID: accountID, reason: reason, at: now),
                completesNotification: completesNotification,
                condition: condition,
                at: now
            )
        )
    }

    /// `email_forwarding_changed`, with the new state as its reason.
    private func forwardingEvent(accountID: String, _ forwarding: EmailForwarding, at now: Date) -> HistoryEvent {
        HistoryEvent(
            id: random.id("evt_", at: now),
            accountID: accountID,
            kind: .emailForwardingChanged,
            occurredAt: now,
            reason: forwarding.rawValue
        )
    }

    /// `credential_revoked`; for Apple's `invalid_grant` at a validation, the verdict first (a millisecond earlier, so
    /// that the history reads in the order things happened).
    private func revocationEvents(accountID: String, reason: CredentialRevocationReason, at now: Date) -> [HistoryEvent] {
        let revoked = HistoryEvent(
            id: random.id("evt_", at: now),
            accountID: accountID,
            kind: .credentialRevoked,
            occurredAt: now,
            reason: reason.rawValue
        )
        guard reason == .invalidGrant else { return [revoked] }
        return [.validation(accountID: accountID, reason: reason.rawValue, at: now.addingTimeInterval(-0.001)), revoked]
    }

    /// Applies a change that calls nobody, and wakes the webhook worker when it wrote webhooks.
    private func apply(_ change: AccountChange) async throws -> AccountChangeOutcome {
        let outcome = try await store.apply(change)
        if case .applied = outcome { wakeups.notify(.webhooks) }
        return outcome
    }

    /// The one deletion: in one transaction the account, its sessions and personal data go, the token the deletion
    /// removed moves sealed into the revocation outbox (leased to this call), the audit record and the webhooks are
    /// written; then, with `revoke`, Apple is asked to revoke, waiting at most the revocation handler's deadline.
    ///
    /// The token to revoke is taken from the row the transaction deleted, not from an earlier read: a sign-in that stored
    /// a newer refresh token meanwhile has that one revoked.
    public func delete(
        accountID: String,
        sealedSubject: String,
        reason: DeletionReason,
        revoke: Bool,
        completesNotification: String?,
        condition: ChangeCondition?,
        logger: Logger
    ) async throws(AccountsError) -> DeletionOutcome {
        let now = clock.now()
        let subject = try await storing { try vault.open(sealedSubject, context: SealingContext.account(accountID, .subject)) }
        let audit = AuditRecord(
            id: random.id("aud_"),
            subjectDigest: try await storing { try await self.audit.digest(subject) },
            event: "account.deleted",
            reason: reason.rawValue,
            occurredAt: now
        )
        let change = AccountChange(
            accountID: accountID,
            action: .delete(audit: audit, revocation: revoke ? revocationPlan(at: now) : nil),
            webhooks: webhooks.deliveries(.deleted, accountID: accountID, at: now, reason: reason.rawValue),
            completesNotification: completesNotification,
            condition: condition,
            at: now
        )
        let job: RevocationJob?
        switch try await storing({ try await store.apply(change) }) {
        case .gone: return .gone
        case .superseded: return .superseded
        case .applied(let revocation): job = revocation
        }
        Counter(label: "orchard_accounts_deleted_total", dimensions: [("reason", reason.rawValue)], factory: metrics).increment()
        logger.info("account deleted", metadata: ["account.id": "\(accountID)", "deletion.reason": "\(reason.rawValue)"])
        wakeups.notify(.webhooks)

        guard revoke else { return .deleted(DeletionResult(appleRevocation: .revoked, manualRevocationURL: nil)) }
        guard let job else {
            return .deleted(DeletionResult(appleRevocation: .manualRequired, manualRevocationURL: DeletionResult.manualRevocationURL))
        }
        // The row was written leased to this call: run it here, with the shorter wait for Apple.
        let result = await engine.run(claimed: [job], with: revocations, logger: logger).first ?? nil
        guard case .done? = result else { return .deleted(DeletionResult(appleRevocation: .pending, manualRevocationURL: nil)) }
        return .deleted(DeletionResult(appleRevocation: .revoked, manualRevocationURL: nil))
    }

    /// How the deletion's transaction turns the tokens it removed into a revocation row: the refresh token, else the
    /// access token, opened under the account's context and sealed under the row's, leased to this call for its wait
    /// for Apple plus 5 s, as the background worker's leases are.
    private func revocationPlan(at now: Date) -> RevocationPlan {
        let id = random.id("rev_")
        let vault = self.vault
        return RevocationPlan(id: id, leaseUntil: now.addingTimeInterval(revocations.leaseDuration.seconds), createdAt: now) {
            removed in
            let token: (value: Redacted<String>, hint: TokenTypeHint)
            if let sealed = removed.sealedRefreshToken {
                token = (try vault.open(sealed, context: SealingContext.account(removed.accountID, .refreshToken)), .refreshToken)
            } else if let sealed = removed.sealedAccessToken {
                token = (try vault.open(sealed, context: SealingContext.account(removed.accountID, .accessToken)), .accessToken)
            } else {
                return nil
            }
            return (try vault.seal(token.value, context: SealingContext.revocation(id)), token.hint)
        }
    }
}
