public import Accounts
import AppleID
public import Foundation
import SQLKit

extension SQLAccountStore: LifecycleStore {
    /// The installation's audit salt.
    public func auditSalt() async throws -> String {
        try await database.withDatabase { db in
            guard let row = try await db.raw("SELECT value FROM orchard_settings WHERE name = 'audit_salt'").first() else {
                throw StoreError.unavailable("the database has no audit salt: run orchard migrate")
            }
            return try row.string("value")
        }
    }

    /// Applies one account change and everything it leaves behind, in one transaction.
    public func apply(_ change: AccountChange) async throws -> Bool {
        let at = change.at.milliseconds
        let applied = try await database.transaction { db -> Bool in
            switch change.action {
            case .delete(let audit, let revocation):
                let deleted = try await db.raw("DELETE FROM accounts WHERE id = \(bind: change.accountID) RETURNING id").all()
                guard !deleted.isEmpty else { return false }
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
                if let job = revocation {
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
            case .setEmailForwarding(let forwarding):
                let updated = try await db.raw(
                    """
                    UPDATE accounts SET email_forwarding = \(bind: forwarding.rawValue), updated_at = \(bind: at)
                    WHERE id = \(bind: change.accountID) RETURNING id
                    """
                ).all()
                guard !updated.isEmpty else { return false }
            case .revokeCredential:
                let updated = try await db.raw(
                    """
                    UPDATE accounts SET apple_credential = 'revoked', updated_at = \(bind: at)
                    WHERE id = \(bind: change.accountID) RETURNING id
                    """
                ).all()
                guard !updated.isEmpty else { return false }
                try await db.raw(
                    """
                    UPDATE sessions SET ended_at = \(bind: at), end_reason = 'apple_credential_revoked'
                    WHERE account_id = \(bind: change.accountID) AND ended_at IS NULL
                    """
                ).run()
            }
            for delivery in change.webhooks {
                try await db.raw(
                    """
                    INSERT INTO webhook_outbox (id, event_id, event_type, url, body, status, attempts, next_attempt_at, created_at)
                    VALUES (\(bind: delivery.id), \(bind: delivery.eventID), \(bind: delivery.eventType), \(bind: delivery.url),
                        \(bind: delivery.body), 'pending', 0, \(bind: delivery.createdAt.milliseconds), \(bind: delivery.createdAt.milliseconds))
                    """
                ).run()
            }
            if let jti = change.completesNotification {
                try await Self.completeNotification(jti: jti, outcome: "processed", at: at, in: db)
            }
            return true
        }
        if applied, case .delete = change.action {
            try await database.purgeDeletedData()
        }
        return applied
    }

    // MARK: Revocations

    /// Claims due, unheld revocations.
    public func claimRevocations(now: Date, leaseUntil: Date, limit: Int) async throws -> [RevocationJob] {
        let candidates = dueRows(.revocations, now: now, limit: limit)
        return try await database.transaction { db in
            let rows = try await db.raw(
                """
                UPDATE revocations SET lease_until = \(bind: leaseUntil.milliseconds)
                WHERE id IN (\(candidates))
                RETURNING id, client_id, sealed_token, token_type_hint, attempts, next_attempt_at, lease_until, last_error, created_at
                """
            ).all()
            return try rows.map(Self.revocation(from:))
        }
    }

    /// Removes an accepted revocation.
    public func completeRevocation(id: String) async throws {
        try await database.withDatabase { db in
            try await db.raw("DELETE FROM revocations WHERE id = \(bind: id)").run()
        }
        try await database.purgeDeletedData()
    }

    /// Releases a revocation for a later try.
    public func rescheduleRevocation(id: String, attempts: Int, nextAttemptAt: Date, lastError: String) async throws {
        try await database.withDatabase { db in
            try await db.raw(
                """
                UPDATE revocations SET attempts = \(bind: attempts), next_attempt_at = \(bind: nextAttemptAt.milliseconds),
                    lease_until = NULL, last_error = \(bind: lastError)
                WHERE id = \(bind: id)
                """
            ).run()
        }
    }

    /// Revocations not yet accepted.
    public func pendingRevocations(limit: Int) async throws -> [RevocationJob] {
        try await database.withDatabase { db in
            try await db.raw(
                """
                SELECT id, client_id, sealed_token, token_type_hint, attempts, next_attempt_at, lease_until, last_error, created_at
                FROM revocations ORDER BY created_at LIMIT \(bind: limit)
                """
            ).all().map(Self.revocation(from:))
        }
    }

    static func revocation(from row: any SQLRow) throws -> RevocationJob {
        RevocationJob(
            id: try row.string("id"),
            clientID: try row.string("client_id"),
            sealedToken: try row.string("sealed_token"),
            hint: TokenTypeHint(rawValue: try row.string("token_type_hint")) ?? .refreshToken,
            attempts: try row.decode(column: "attempts", as: Int.self),
            nextAttemptAt: try row.date("next_attempt_at") ?? Date(timeIntervalSince1970: 0),
            leaseUntil: try row.date("lease_until"),
            lastError: try row.optionalString("last_error"),
            createdAt: try row.date("created_at") ?? Date(timeIntervalSince1970: 0)
        )
    }

    // MARK: Notifications

    /// Stores a notification unless its `jti` is known.
    public func insertNotification(_ entry: InboxEntry, nextAttemptAt: Date) async throws -> Bool {
        try await database.withDatabase { db in
            let inserted = try await db.raw(
                """
                INSERT INTO notification_inbox (jti, received_at, event_type, subject_digest, sealed_event, attempts, next_attempt_at)
                VALUES (\(bind: entry.jti), \(bind: entry.receivedAt.milliseconds), \(bind: entry.eventType), \(bind: entry.subjectDigest),
                    \(bind: entry.sealedEvent), 0, \(bind: nextAttemptAt.milliseconds))
                ON CONFLICT (jti) DO NOTHING
                RETURNING jti
                """
            ).all()
            return !inserted.isEmpty
        }
    }

    /// Claims due, unprocessed notifications.
    public func claimNotifications(now: Date, leaseUntil: Date, limit: Int) async throws -> [InboxEntry] {
        let candidates = dueRows(.notifications, now: now, limit: limit)
        return try await database.transaction { db in
            try await db.raw(
                """
                UPDATE notification_inbox SET lease_until = \(bind: leaseUntil.milliseconds)
                WHERE jti IN (\(candidates))
                RETURNING jti, received_at, event_type, subject_digest, sealed_event, attempts
                """
            ).all().map(Self.inboxEntry(from:))
        }
    }

    /// Marks a notification processed and drops its sealed event.
    public func completeNotification(jti: String, outcome: String, at: Date) async throws {
        try await database.transaction { db in
            try await Self.completeNotification(jti: jti, outcome: outcome, at: at.milliseconds, in: db)
        }
        try await database.purgeDeletedData()
    }

    static func completeNotification(jti: String, outcome: String, at: Int64, in db: any SQLDatabase) async throws {
        try await db.raw(
            """
            UPDATE notification_inbox SET sealed_event = NULL, processed_at = \(bind: at), outcome = \(bind: outcome),
                next_attempt_at = NULL, lease_until = NULL
            WHERE jti = \(bind: jti)
            """
        ).run()
    }

    /// Releases a notification for a later try.
    public func rescheduleNotification(jti: String, attempts: Int, nextAttemptAt: Date) async throws {
        try await database.withDatabase { db in
            try await db.raw(
                """
                UPDATE notification_inbox SET attempts = \(bind: attempts), next_attempt_at = \(bind: nextAttemptAt.milliseconds),
                    lease_until = NULL
                WHERE jti = \(bind: jti) AND processed_at IS NULL
                """
            ).run()
        }
    }

    /// The inbox record of a notification.
    public func notification(jti: String) async throws -> InboxEntry? {
        try await database.withDatabase { db in
            try await db.raw(
                "SELECT jti, received_at, event_type, subject_digest, sealed_event, attempts FROM notification_inbox WHERE jti = \(bind: jti)"
            ).first().map(Self.inboxEntry(from:))
        }
    }

    static func inboxEntry(from row: any SQLRow) throws -> InboxEntry {
        InboxEntry(
            jti: try row.string("jti"),
            receivedAt: try row.date("received_at") ?? Date(timeIntervalSince1970: 0),
            eventType: try row.string("event_type"),
            subjectDigest: try row.string("subject_digest"),
            sealedEvent: try row.optionalString("sealed_event"),
            attempts: try row.decode(column: "attempts", as: Int.self)
        )
    }

    // MARK: Webhooks

    /// Claims due, pending deliveries.
    public func claimWebhooks(now: Date, leaseUntil: Date, limit: Int) async throws -> [WebhookDelivery] {
        let candidates = dueRows(.webhooks, now: now, limit: limit)
        return try await database.transaction { db in
            try await db.raw(
                """
                UPDATE webhook_outbox SET lease_until = \(bind: leaseUntil.milliseconds)
                WHERE id IN (\(candidates))
                RETURNING id, event_id, event_type, url, body, attempts, created_at
                """
            ).all().map(Self.delivery(from:))
        }
    }

    /// Marks a delivery done.
    public func markWebhookDelivered(id: String, at: Date) async throws {
        try await database.withDatabase { db in
            try await db.raw(
                """
                UPDATE webhook_outbox SET status = 'delivered', delivered_at = \(bind: at.milliseconds), attempts = attempts + 1,
                    next_attempt_at = NULL, lease_until = NULL
                WHERE id = \(bind: id)
                """
            ).run()
        }
    }

    /// Releases a delivery for a later try.
    public func rescheduleWebhook(id: String, attempts: Int, nextAttemptAt: Date, lastError: String) async throws {
        try await database.withDatabase { db in
            try await db.raw(
                """
                UPDATE webhook_outbox SET attempts = \(bind: attempts), next_attempt_at = \(bind: nextAttemptAt.milliseconds),
                    lease_until = NULL, last_error = \(bind: lastError)
                WHERE id = \(bind: id)
                """
            ).run()
        }
    }

    /// Gives a delivery up.
    public func markWebhookFailed(id: String, attempts: Int, lastError: String) async throws {
        try await database.withDatabase { db in
            try await db.raw(
                """
                UPDATE webhook_outbox SET status = 'failed', attempts = \(bind: attempts), next_attempt_at = NULL, lease_until = NULL,
                    last_error = \(bind: lastError)
                WHERE id = \(bind: id)
                """
            ).run()
        }
    }

    /// Deliveries in a state.
    public func webhooks(status: String, limit: Int) async throws -> [WebhookDeliveryStatus] {
        try await database.withDatabase { db in
            try await db.raw(
                """
                SELECT id, event_id, event_type, url, body, attempts, created_at, status, last_error, next_attempt_at
                FROM webhook_outbox WHERE status = \(bind: status) ORDER BY created_at LIMIT \(bind: limit)
                """
            ).all().map { row in
                WebhookDeliveryStatus(
                    delivery: try Self.delivery(from: row),
                    status: try row.string("status"),
                    lastError: try row.optionalString("last_error"),
                    nextAttemptAt: try row.date("next_attempt_at")
                )
            }
        }
    }

    static func delivery(from row: any SQLRow) throws -> WebhookDelivery {
        WebhookDelivery(
            id: try row.string("id"),
            eventID: try row.string("event_id"),
            eventType: try row.string("event_type"),
            url: try row.string("url"),
            body: try row.string("body"),
            attempts: try row.decode(column: "attempts", as: Int.self),
            createdAt: try row.date("created_at") ?? Date(timeIntervalSince1970: 0)
        )
    }
}
