import AppleID
import Crypto
public import Foundation
public import Logging
import Metrics
import Synchronization

/// Why an account was deleted (`reason` of the `account.deleted` webhook).
public enum DeletionReason: String, Sendable, CaseIterable {
    /// The user asked (`DELETE /v1/account`).
    case userRequest = "user_request"
    /// An operator ran `orchard accounts delete`.
    case byOperator = "operator"
    /// Apple said the user revoked consent, under the `delete` policy.
    case consentRevoked = "consent_revoked"
    /// Apple said the user deleted their Apple ID.
    case appleAccountDeleted = "apple_account_deleted"
}

/// What became of the user's authorization at Apple (`apple_revocation` in the API).
public enum AppleRevocationOutcome: String, Sendable {
    /// Apple accepted the revocation.
    case revoked
    /// Apple could not be reached or refused for now; the background worker retries until it accepts.
    case pending
    /// No token was held: the user must revoke by hand at Apple's page.
    case manualRequired = "manual_required"
}

/// The answer to a deletion.
public struct DeletionResult: Sendable {
    /// What became of the authorization at Apple.
    public var appleRevocation: AppleRevocationOutcome
    /// Apple's page for revoking by hand, with ``AppleRevocationOutcome/manualRequired``.
    public var manualRevocationURL: URL?
}

extension Accounts {
    /// Apple's page that tells a user how to stop using Sign in with Apple with an app (TN3194).
    public static let manualRevocationURL = URL(string: "https://support.apple.com/en-us/102571")!

    /// Deletes the account behind a session (`DELETE /v1/account`).
    public func deleteAccount(sessionToken: String, logger: Logger) async throws(AccountsError) -> DeletionResult {
        let (_, account) = try await liveSession(token: sessionToken)
        return try await deleteRevoking(accountID: account.id, sealedSubject: account.sealedSubject, reason: .userRequest, logger: logger)
    }

    /// Deletes an account by id (`orchard accounts delete`).
    public func deleteAccount(id: String, reason: DeletionReason, logger: Logger) async throws(AccountsError) -> DeletionResult {
        guard let record = try await storing({ try await store.account(id: id) }) else {
            throw AccountsError(.notFound, "no account with that id")
        }
        return try await deleteRevoking(accountID: record.id, sealedSubject: record.sealedSubject, reason: reason, logger: logger)
    }

    /// A deletion asked for by the user or an operator: it revokes at Apple, whatever the account has become since it
    /// was read.
    private func deleteRevoking(
        accountID: String,
        sealedSubject: String,
        reason: DeletionReason,
        logger: Logger
    ) async throws(AccountsError) -> DeletionResult {
        let outcome = try await delete(
            accountID: accountID,
            sealedSubject: sealedSubject,
            reason: reason,
            revoke: true,
            completesNotification: nil,
            condition: nil,
            logger: logger
        )
        switch outcome {
        case .deleted(let result): return result
        case .gone, .superseded: throw AccountsError(.sessionInvalid, "the account was already deleted")
        }
    }

    /// What became of a deletion.
    enum DeletionOutcome {
        /// The account is gone, with what became of the revocation.
        case deleted(DeletionResult)
        /// It was already gone.
        case gone
        /// It no longer meets the deletion's condition (a late notification): nothing was deleted.
        case superseded
    }

    /// The one deletion: in one transaction the account, its sessions and personal data go, the token the deletion
    /// removed moves sealed into the revocation outbox (leased to this request), the audit record and the webhooks are
    /// written; then Apple is asked to revoke, waiting at most ``AccountsConfiguration/revocationWait``.
    ///
    /// The token to revoke is taken from the row the transaction deleted, not from an earlier read: a sign-in that stored
    /// a newer refresh token meanwhile has that one revoked.
    func delete(
        accountID: String,
        sealedSubject: String,
        reason: DeletionReason,
        revoke: Bool,
        completesNotification: String?,
        condition: ChangeCondition?,
        logger: Logger
    ) async throws(AccountsError) -> DeletionOutcome {
        let now = clock.now()
        let change: AccountChange
        do {
            let subject = try vault.open(sealedSubject, context: Self.context(accountID, "subject"))
            let plan = revoke ? revocationPlan(at: now) : nil
            let audit = AuditRecord(
                id: randomID("aud_"),
                subjectDigest: try await auditDigest(subject),
                event: "account.deleted",
                reason: reason.rawValue,
                occurredAt: now
            )
            change = AccountChange(
                accountID: accountID,
                action: .delete(audit: audit, revocation: plan),
                webhooks: webhooks(
                    for: WebhookEvent(type: "account.deleted", id: randomID("evt_"), occurredAt: now, accountID: accountID, reason: reason.rawValue)
                ),
                completesNotification: completesNotification,
                condition: condition,
                at: now
            )
        } catch let error as AccountsError {
            throw error
        } catch {
            throw AccountsError.storage(error)
        }
        let outcome: AccountChangeOutcome
        do {
            outcome = try await store.apply(change)
        } catch let error as AccountsError {
            throw error
        } catch {
            throw AccountsError.storage(error)
        }
        let job: RevocationJob?
        switch outcome {
        case .gone: return .gone
        case .superseded: return .superseded
        case .applied(let revocation): job = revocation
        }
        Counter(label: "orchard_accounts_deleted_total", dimensions: [("reason", reason.rawValue)], factory: metrics).increment()
        logger.info("account deleted", metadata: ["account.id": "\(accountID)", "deletion.reason": "\(reason.rawValue)"])
        wakeups.notify(.webhooks)

        guard revoke else { return .deleted(DeletionResult(appleRevocation: .revoked, manualRevocationURL: nil)) }
        guard let job else {
            return .deleted(DeletionResult(appleRevocation: .manualRequired, manualRevocationURL: Self.manualRevocationURL))
        }
        // The row was written leased to this request: run it here, with the request's shorter wait for Apple.
        let handler = RevocationHandler(accounts: self, deadline: configuration.revocationWait)
        let result = await engine.run(claimed: [job], with: handler, logger: logger).first ?? nil
        guard case .done(_)? = result else { return .deleted(DeletionResult(appleRevocation: .pending, manualRevocationURL: nil)) }
        return .deleted(DeletionResult(appleRevocation: .revoked, manualRevocationURL: nil))
    }

    /// How the deletion's transaction turns the tokens it removed into a revocation row: the refresh token, else the
    /// access token, opened under the account's context and sealed under the row's, leased to this request for its
    /// wait for Apple plus 5 s, as the background worker's leases are.
    private func revocationPlan(at now: Date) -> RevocationPlan {
        let id = randomID("rev_")
        let vault = self.vault
        return RevocationPlan(id: id, leaseUntil: now.addingTimeInterval((configuration.revocationWait + .seconds(5)).seconds), createdAt: now) {
            removed in
            let token: (value: Redacted<String>, hint: TokenTypeHint)
            if let sealed = removed.sealedRefreshToken {
                token = (try vault.open(sealed, context: Self.context(removed.accountID, "refresh_token")), .refreshToken)
            } else if let sealed = removed.sealedAccessToken {
                token = (try vault.open(sealed, context: Self.context(removed.accountID, "access_token")), .accessToken)
            } else {
                return nil
            }
            return (try vault.seal(token.value, context: Self.revocationContext(id)), token.hint)
        }
    }

    /// The sealing context of a token in the revocation outbox.
    static func revocationContext(_ id: String) -> String { "revocation:\(id):token" }

    /// The salted hash of a subject kept in audit and inbox records: SHA-256 of the installation's salt and the subject.
    func auditDigest(_ subject: Redacted<String>) async throws -> String {
        let salt: String
        if let cached = auditSaltCache.withLock({ $0 }) {
            salt = cached
        } else {
            salt = try await store.auditSalt()
            auditSaltCache.withLock { $0 = salt }
        }
        return SHA256.hash(data: Data("\(salt):\(subject.value)".utf8)).hexString
    }

    /// One outbox row per configured URL for an event; none, and the body not encoded, when no URL is configured (the
    /// encoding was 1.5 % of the server's CPU under notification ingest in a `perf` profile, for rows never written).
    func webhooks(for event: WebhookEvent) -> [WebhookDelivery] {
        guard !configuration.webhookURLs.isEmpty else { return [] }
        let body = event.body
        return configuration.webhookURLs.map { url in
            WebhookDelivery(
                id: randomID("whd_"),
                eventID: event.id,
                eventType: event.type,
                url: url,
                body: body,
                attempts: 0,
                createdAt: event.occurredAt
            )
        }
    }
}
