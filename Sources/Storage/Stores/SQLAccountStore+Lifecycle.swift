public import Accounts
import AppleID
import Foundation
import SQLKit

extension SQLAccountStore: AccountChangeStore {
    /// The installation's audit salt.
    public func auditSalt() async throws -> String {
        guard let row = try await database.read("SELECT value FROM orchard_settings WHERE name = 'audit_salt'").first else {
            throw StoreError.unavailable("the database has no audit salt: run orchard migrate")
        }
        return try row.string("value")
    }

    /// Applies one account change and everything it leaves behind, in one transaction. The change's condition is part
    /// of its first statement, so a change decided on an earlier read writes nothing once the account has moved on.
    public func apply(_ change: AccountChange) async throws -> AccountChangeOutcome {
        let at = change.at.milliseconds
        let condition = Self.sql(change.condition)
        let write: @Sendable (any SQLDatabase) async throws -> AccountChangeOutcome = { db in
            var revocation: RevocationJob?
            switch change.action {
            case .delete(let audit, let plan):
                let deleted = try await db.raw(
                    """
                    DELETE FROM accounts WHERE id = \(bind: change.accountID)\(condition)
                    RETURNING id, client_id, sealed_refresh_token, sealed_access_token
                    """
                ).all()
                guard let row = deleted.first else { return try await Self.whyUnchanged(change.accountID, on: db) }
                let removed = RemovedTokens(
                    accountID: change.accountID,
                    clientID: try row.string("client_id"),
                    sealedRefreshToken: try row.optionalString("sealed_refresh_token"),
                    sealedAccessToken: try row.optionalString("sealed_access_token")
                )
                // A transfer identifier is the user's too. An imported account leaves only its id, marked deleted, so
                // that running `transfer import` again does not bring it back.
                try await db.raw("DELETE FROM transfer_exports WHERE account_id = \(bind: change.accountID)").run()
                try await db.raw(
                    """
                    UPDATE transfer_imports SET state = 'deleted', last_error = NULL, updated_at = \(bind: at)
                    WHERE account_id = \(bind: change.accountID)
                    """
                ).run()
                try await db.raw(
                    """
                    UPDATE sessions SET ended_at = \(bind: at), end_reason = 'account_deleted'
                    WHERE account_id = \(bind: change.accountID) AND ended_at IS NULL
                    """
                ).run()
                try await db.raw(
                    """
                    INSERT INTO audit_events (id, subject_digest, event, reason, occurred_at)
                    VALUES (\(bind: audit.id), \(bind: audit.subjectDigest), \(bind: audit.event), \(bind: audit.reason),
                            \(bind: audit.occurredAt.milliseconds))
                    """
                ).run()
                // Events still waiting for this subject hold its sealed data: drop it, keep the record against duplicates.
                try await db.raw(
                    """
                    UPDATE notification_inbox SET sealed_event = NULL, processed_at = \(bind: at), outcome = 'account_deleted',
                        next_attempt_at = NULL, lease_until = NULL
                    WHERE subject_digest = \(bind: audit.subjectDigest) AND processed_at IS NULL
                    """
                ).run()
                // The token this deletion removed, whatever an earlier read of the account said.
                if let job = try plan?.job(for: removed) {
                    try await Self.insertRevocation(job, on: db)
                    revocation = job
                }
            case .setEmailForwarding(let forwarding):
                let updated = try await db.raw(
                    """
                    UPDATE accounts SET email_forwarding = \(bind: forwarding.rawValue), updated_at = \(bind: at)
                    WHERE id = \(bind: change.accountID)\(condition) RETURNING id
                    """
                ).all()
                guard !updated.isEmpty else { return try await Self.whyUnchanged(change.accountID, on: db) }
            case .revokeCredential:
                let updated = try await db.raw(
                    """
                    UPDATE accounts SET apple_credential = 'revoked', updated_at = \(bind: at)
                    WHERE id = \(bind: change.accountID)\(condition) RETURNING id
                    """
                ).all()
                guard !updated.isEmpty else { return try await Self.whyUnchanged(change.accountID, on: db) }
                try await db.raw(
                    """
                    UPDATE sessions SET ended_at = \(bind: at), end_reason = 'apple_credential_revoked'
                    WHERE account_id = \(bind: change.accountID) AND ended_at IS NULL
                    """
                ).run()
            }
            for delivery in change.webhooks {
                try await Self.insertWebhook(delivery, on: db)
            }
            if let jti = change.completesNotification {
                try await Self.completeNotification(jti: jti, outcome: "processed", at: at, in: db)
            }
            return .applied(revocation: revocation)
        }
        let outcome: AccountChangeOutcome
        switch change.action {
        case .delete, .revokeCredential:
            outcome = try await database.endingSessions(.accounts([change.accountID]), write)
        case .setEmailForwarding:
            outcome = try await database.transaction(write)
            database.changed(account: change.accountID)
        }
        if case .applied = outcome, case .delete = change.action {
            try await database.purgeDeletedData()
        }
        return outcome
    }

    /// A change's condition as SQL to add to its statement's `WHERE` (empty for none).
    static func sql(_ condition: ChangeCondition?) -> SQLQueryString {
        switch condition {
        case nil: ""
        case .grantedNoLaterThan(let instant): " AND COALESCE(granted_at, created_at) <= \(bind: instant.milliseconds)"
        case .refreshToken(let sealed?): " AND sealed_refresh_token = \(bind: sealed)"
        case .refreshToken(nil): " AND sealed_refresh_token IS NULL"
        }
    }

    /// Why a change's statement matched no row: the account is gone, or no longer meets the condition.
    static func whyUnchanged(_ accountID: String, on db: any SQLDatabase) async throws -> AccountChangeOutcome {
        try await db.raw("SELECT id FROM accounts WHERE id = \(bind: accountID)").first() == nil ? .gone : .superseded
    }
}

extension SQLAccountStore {
    /// Adds a webhook delivery to the outbox (inside the caller's transaction).
    static func insertWebhook(_ delivery: WebhookDelivery, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            INSERT INTO webhook_outbox (id, event_id, event_type, url, body, status, attempts, next_attempt_at, created_at)
            VALUES (\(bind: delivery.id), \(bind: delivery.eventID), \(bind: delivery.eventType), \(bind: delivery.url),
                \(bind: delivery.body), 'pending', 0, \(bind: delivery.createdAt.milliseconds), \(bind: delivery.createdAt.milliseconds))
            """
        ).run()
    }

    /// Adds a revocation to the outbox (inside the caller's transaction).
    static func insertRevocation(_ job: RevocationJob, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            INSERT INTO revocations (id, client_id, sealed_token, token_type_hint, attempts, next_attempt_at, lease_until,
                last_error, created_at)
            VALUES (\(bind: job.id), \(bind: job.clientID), \(bind: job.sealedToken), \(bind: job.hint.rawValue),
                \(bind: job.attempts), \(bind: job.nextAttemptAt.milliseconds), \(bind: job.leaseUntil?.milliseconds),
                NULL, \(bind: job.createdAt.milliseconds))
            """
        ).run()
    }
}
