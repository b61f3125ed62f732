public import Accounts
import AppleID
import Foundation
public import SQLKit

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
        let write: @Sendable (SessionChange) async throws -> AccountChangeOutcome = { sessions in
            let db = sessions.db
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
                try await sessions.endSessions(reason: .accountDeleted, at: at)
                // A device label is the user's: gone from every session of the account, ended earlier or now.
                try await db.raw(
                    """
                    UPDATE sessions SET sealed_device = NULL
                    WHERE account_id = \(bind: change.accountID) AND sealed_device IS NOT NULL
                    """
                ).run()
                // The history goes with the account. After the sessions' rows: on PostgreSQL a sign-out that ended one
                // of them first has committed its event by now, and this statement's snapshot sees it.
                try await db.raw("DELETE FROM account_events WHERE account_id = \(bind: change.accountID)").run()
                try await db.raw(
                    """
                    INSERT INTO audit_events (id, subject_digest, event, reason, occurred_at)
                    VALUES (\(bind: audit.id), \(bind: audit.subjectDigest), \(bind: audit.event), \(bind: audit.reason),
                            \(bind: audit.occurredAt.milliseconds))
                    """
                ).run()
                // Events still waiting for this subject hold its sealed data: drop it, keep the record against duplicates.
                try await db.raw(Self.closeWaitingNotifications(subjectDigest: audit.subjectDigest, accountID: change.accountID, at: at)).run()
                // The token this deletion removed, whatever an earlier read of the account said.
                if let plan {
                    if let job = try plan.job(for: removed) {
                        try await Self.insertRevocation(job, on: db)
                        revocation = job
                    } else {
                        // No token was held: the user revokes on Apple's page; operators see it waiting there.
                        try await db.raw(
                            """
                            INSERT INTO manual_revocations (account_id, client_id, deleted_at)
                            VALUES (\(bind: change.accountID), \(bind: removed.clientID), \(bind: at))
                            ON CONFLICT DO NOTHING
                            """
                        ).run()
                    }
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
                try await sessions.endSessions(reason: .appleCredentialRevoked, at: at)
            }
            for delivery in change.webhooks {
                try await Self.insertWebhook(delivery, on: db)
            }
            try await Self.insertEvents(change.history, on: db)
            if let jti = change.completesNotification {
                try await Self.completeNotification(jti: jti, outcome: .processed, accountID: change.accountID, at: at, in: db)
            }
            return .applied(revocation: revocation)
        }
        let outcome: AccountChangeOutcome
        switch change.action {
        case .delete, .revokeCredential:
            outcome = try await keeper.ending(.accounts([change.accountID]), write)
        case .setEmailForwarding:
            outcome = try await keeper.changing(.accounts([change.accountID]), write)
        }
        if case .applied = outcome, case .delete = change.action {
            try await database.purgeDeletedData()
        }
        return outcome
    }

    /// Applies email-forwarding changes of different accounts in one transaction of at most six statements: the
    /// notifications still unprocessed are marked processed (so a notification another replica finished meanwhile
    /// changes nothing), their accounts are updated in one `UPDATE … FROM` where each still meets its grant condition,
    /// the marks of those that did not are corrected, and their webhooks and history events are inserted in one statement each.
    public func applyForwardingChanges(_ changes: [AccountChange]) async throws -> [AccountChangeOutcome] {
        guard let at = changes.first?.at.milliseconds else { return [] }
        let rows: [(jti: String, accountID: String, forwarding: String, grantedNoLaterThan: Int64)] = changes.compactMap { change in
            guard case .setEmailForwarding(let forwarding) = change.action, let jti = change.completesNotification,
                case .grantedNoLaterThan(let limit) = change.condition
            else { return nil }
            return (jti, change.accountID, forwarding.rawValue, limit.milliseconds)
        }
        precondition(rows.count == changes.count, "applyForwardingChanges takes email-forwarding changes that complete a notification")
        let (marked, applied, existing) = try await keeper.changing(.accounts(rows.map(\.accountID))) { sessions in
            let db = sessions.db
            let marked = Set(
                try await db.raw(
                    """
                    UPDATE notification_inbox SET sealed_event = NULL, processed_at = \(bind: at), outcome = \(bind: InboxOutcome.Kind.processed.rawValue),
                        account_id = \(Self.accountIDs(rows.map { ($0.jti, $0.accountID) })), next_attempt_at = NULL, lease_until = NULL
                    WHERE jti IN (\(binds: rows.map(\.jti))) AND processed_at IS NULL
                    RETURNING jti
                    """
                ).all().map { try $0.string("jti") }
            )
            let updates = rows.filter { marked.contains($0.jti) }
            guard !updates.isEmpty else { return (marked, Set<String>(), Set<String>()) }
            let values = updates.map { row -> SQLQueryString in
                """
                SELECT CAST(\(bind: row.accountID) AS TEXT) AS id, CAST(\(bind: row.forwarding) AS TEXT) AS forwarding,
                    CAST(\(bind: row.grantedNoLaterThan) AS BIGINT) AS granted_limit
                """
            }.joined(separator: " UNION ALL ")
            let applied = Set(
                try await db.raw(
                    """
                    UPDATE accounts SET email_forwarding = v.forwarding, updated_at = \(bind: at)
                    FROM (\(values)) AS v
                    WHERE accounts.id = v.id AND COALESCE(accounts.granted_at, accounts.created_at) <= v.granted_limit
                    RETURNING accounts.id
                    """
                ).all().map { try $0.string("id") }
            )
            let unchanged = updates.filter { !applied.contains($0.accountID) }
            var existing = Set<String>()
            if !unchanged.isEmpty {
                existing = Set(
                    try await db.raw("SELECT id FROM accounts WHERE id IN (\(binds: unchanged.map(\.accountID)))").all()
                        .map { try $0.string("id") }
                )
                for (outcome, group): (InboxOutcome.Kind, _) in [
                    (.predatesGrant, unchanged.filter { existing.contains($0.accountID) }),
                    (.unknownSubject, unchanged.filter { !existing.contains($0.accountID) }),
                ]
                where !group.isEmpty {
                    try await db.raw(
                        "UPDATE notification_inbox SET outcome = \(bind: outcome.rawValue) WHERE jti IN (\(binds: group.map(\.jti)))"
                    ).run()
                }
            }
            let done = changes.filter { applied.contains($0.accountID) && marked.contains($0.completesNotification ?? "") }
            let webhooks = done.flatMap(\.webhooks)
            if !webhooks.isEmpty { try await Self.insertWebhooks(webhooks, on: db) }
            try await Self.insertEvents(done.flatMap(\.history), on: db)
            return (marked, applied, existing)
        }
        return rows.map { row in
            if !marked.contains(row.jti) { return .gone }
            if applied.contains(row.accountID) { return .applied(revocation: nil) }
            return existing.contains(row.accountID) ? .superseded : .gone
        }
    }

    /// Marks the notifications still waiting for a deleted subject as `account_deleted`, dropping their sealed events.
    /// It finds them through `notification_inbox_sealed_subject`, which holds only the rows that still hold a sealed
    /// event (the storage tests `EXPLAIN` it on every backend); every waiting notification does.
    public static func closeWaitingNotifications(subjectDigest: String, accountID: String, at: Int64) -> SQLQueryString {
        """
        UPDATE notification_inbox SET sealed_event = NULL, processed_at = \(bind: at), outcome = \(bind: InboxOutcome.Kind.accountDeleted.rawValue),
            account_id = \(bind: accountID), next_attempt_at = NULL, lease_until = NULL
        WHERE subject_digest = \(bind: subjectDigest) AND sealed_event IS NOT NULL AND processed_at IS NULL
        """
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

    /// Adds webhook deliveries to the outbox in one statement (inside the caller's transaction).
    static func insertWebhooks(_ deliveries: [WebhookDelivery], on db: any SQLDatabase) async throws {
        let values = deliveries.map { delivery -> SQLQueryString in
            """
            (\(bind: delivery.id), \(bind: delivery.eventID), \(bind: delivery.eventType), \(bind: delivery.url),
                \(bind: delivery.body), 'pending', 0, \(bind: delivery.createdAt.milliseconds), \(bind: delivery.createdAt.milliseconds))
            """
        }.joined(separator: ", ")
        try await db.raw(
            """
            INSERT INTO webhook_outbox (id, event_id, event_type, url, body, status, attempts, next_attempt_at, created_at)
            VALUES \(values)
            """
        ).run()
    }

    /// Adds a revocation to the outbox (inside the caller's transaction).
    static func insertRevocation(_ job: RevocationJob, on db: any SQLDatabase) async throws {
        try await db.raw(
            """
            INSERT INTO revocations (id, client_id, sealed_token, token_type_hint, attempts, next_attempt_at, lease_until,
                last_error, created_at, account_id)
            VALUES (\(bind: job.id), \(bind: job.clientID), \(bind: job.sealedToken), \(bind: job.hint.rawValue),
                \(bind: job.attempts), \(bind: job.nextAttemptAt.milliseconds), \(bind: job.leaseUntil?.milliseconds),
                NULL, \(bind: job.createdAt.milliseconds), \(bind: job.accountID))
            """
        ).run()
    }
}
