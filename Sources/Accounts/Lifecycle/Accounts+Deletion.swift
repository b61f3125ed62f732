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
        return try await delete(account, reason: .userRequest, revoke: true, completesNotification: nil, logger: logger)
    }

    /// Deletes an account by id (`orchard accounts delete`).
    public func deleteAccount(id: String, reason: DeletionReason, logger: Logger) async throws(AccountsError) -> DeletionResult {
        let record: AccountRecord?
        do {
            record = try await store.account(id: id)
        } catch {
            throw AccountsError.storage(error)
        }
        guard let record else { throw AccountsError(.notFound, "no account with that id") }
        return try await delete(record, reason: reason, revoke: true, completesNotification: nil, logger: logger)
    }

    /// The one deletion: in one transaction the account, its sessions and personal data go, the token moves sealed into
    /// the revocation outbox (leased to this request), the audit record and the webhooks are written; then Apple is
    /// asked to revoke, waiting at most ``AccountsConfiguration/revocationWait``.
    func delete(
        _ record: AccountRecord,
        reason: DeletionReason,
        revoke: Bool,
        completesNotification: String?,
        logger: Logger
    ) async throws(AccountsError) -> DeletionResult {
        let now = clock.now()
        let token: (value: Redacted<String>, hint: TokenTypeHint)?
        let job: RevocationJob?
        let change: AccountChange
        do {
            let subject = try vault.open(record.sealedSubject, context: Self.context(record.id, "subject"))
            if !revoke {
                token = nil
            } else if let sealed = record.sealedRefreshToken {
                token = (try vault.open(sealed, context: Self.context(record.id, "refresh_token")), .refreshToken)
            } else if let sealed = record.sealedAccessToken {
                token = (try vault.open(sealed, context: Self.context(record.id, "access_token")), .accessToken)
            } else {
                token = nil
            }
            if let token {
                let id = randomID("rev_")
                // Leased to this request for its wait for Apple plus 5 s, as the background worker's leases are.
                let leaseUntil = now.addingTimeInterval((configuration.revocationWait + .seconds(5)).seconds)
                job = RevocationJob(
                    id: id,
                    clientID: record.clientID,
                    sealedToken: try vault.seal(token.value, context: Self.revocationContext(id)),
                    hint: token.hint,
                    attempts: 0,
                    nextAttemptAt: leaseUntil,
                    leaseUntil: leaseUntil,
                    lastError: nil,
                    createdAt: now
                )
            } else {
                job = nil
            }
            let audit = AuditRecord(
                id: randomID("aud_"),
                subjectDigest: try await auditDigest(subject),
                event: "account.deleted",
                reason: reason.rawValue,
                occurredAt: now
            )
            change = AccountChange(
                accountID: record.id,
                action: .delete(audit: audit, revocation: job),
                webhooks: webhooks(
                    for: WebhookEvent(type: "account.deleted", id: randomID("evt_"), occurredAt: now, accountID: record.id, reason: reason.rawValue)
                ),
                completesNotification: completesNotification,
                at: now
            )
        } catch let error as AccountsError {
            throw error
        } catch {
            throw AccountsError.storage(error)
        }
        let applied: Bool
        do {
            applied = try await store.apply(change)
        } catch {
            throw AccountsError.storage(error)
        }
        guard applied else { throw AccountsError(.sessionInvalid, "the account was already deleted") }
        Counter(label: "orchard_accounts_deleted_total", dimensions: [("reason", reason.rawValue)], factory: metrics).increment()
        logger.info("account deleted", metadata: ["account.id": "\(record.id)", "deletion.reason": "\(reason.rawValue)"])
        wakeups.notify(.webhooks)

        guard revoke else { return DeletionResult(appleRevocation: .revoked, manualRevocationURL: nil) }
        guard let job else {
            return DeletionResult(appleRevocation: .manualRequired, manualRevocationURL: Self.manualRevocationURL)
        }
        // The row was written leased to this request: run it here, with the request's shorter wait for Apple.
        let handler = RevocationHandler(accounts: self, deadline: configuration.revocationWait)
        let outcome = await engine.run(claimed: [job], with: handler, logger: logger).first ?? nil
        guard case .done(_)? = outcome else { return DeletionResult(appleRevocation: .pending, manualRevocationURL: nil) }
        return DeletionResult(appleRevocation: .revoked, manualRevocationURL: nil)
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
