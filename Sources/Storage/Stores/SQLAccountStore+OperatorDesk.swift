public import Accounts
public import Foundation
import SQLKit

/// What operators look at: each read goes through an index and opens nothing sealed.
extension SQLAccountStore: OperatorDeskStore {
    /// Accounts by id, subject hash or email hash: one statement over three indexes.
    public func accounts(id: String, hashes: [String], limit: Int) async throws -> [AccountRecord] {
        try await database.read(
            """
            SELECT \(unsafeRaw: Self.accountColumns) FROM accounts
            WHERE id = \(bind: id) OR subject_hash IN (\(binds: hashes)) OR email_hash IN (\(binds: hashes))
            ORDER BY created_at DESC, id LIMIT \(bind: limit)
            """
        ).map(Self.account(from:))
    }

    /// The errors after which a queued revocation waits on the operator rather than on Apple: Apple refuses Orchard's
    /// client (the key, team or client id), or the token's vault key is gone.
    static let operatorErrors = ["apple_client_rejected", "vault_key_missing"]

    /// Deletions whose revocation is not done: queued ones from the outbox, `manual_required` ones from their table.
    public func queuedRevocations(_ state: RevocationQueueState, limit: Int) async throws -> [QueuedRevocation] {
        if state == .manualRequired {
            return try await database.read(
                """
                SELECT account_id, deleted_at FROM manual_revocations ORDER BY deleted_at DESC, account_id LIMIT \(bind: limit)
                """
            ).map { row in
                QueuedRevocation(
                    accountID: try row.string("account_id"),
                    deletedAt: try row.date("deleted_at") ?? Date(timeIntervalSince1970: 0),
                    state: .manualRequired,
                    attempts: 0,
                    nextAttemptAt: nil,
                    lastError: nil
                )
            }
        }
        let failed: SQLQueryString = "last_error IN (\(binds: Self.operatorErrors))"
        let condition: SQLQueryString = state == .failed ? failed : "(last_error IS NULL OR NOT \(failed))"
        return try await database.read(
            """
            SELECT id, account_id, created_at, attempts, next_attempt_at, last_error FROM revocations
            WHERE \(condition) ORDER BY created_at DESC, id LIMIT \(bind: limit)
            """
        ).map { row in
            QueuedRevocation(
                id: try row.string("id"),
                accountID: try row.optionalString("account_id"),
                deletedAt: try row.date("created_at") ?? Date(timeIntervalSince1970: 0),
                state: state,
                attempts: try row.decode(column: "attempts", as: Int.self),
                nextAttemptAt: try row.date("next_attempt_at"),
                lastError: try row.optionalString("last_error")
            )
        }
    }

    /// A failed revocation due now, its lease (kept since its last attempt) let go; one still pending is left to its
    /// schedule.
    public func retryRevocation(id: String, at now: Date) async throws -> Bool {
        try await database.withDatabase { db in
            !(try await db.raw(
                """
                UPDATE revocations SET next_attempt_at = \(bind: now.milliseconds), lease_until = NULL
                WHERE id = \(bind: id) AND last_error IN (\(binds: Self.operatorErrors))
                RETURNING id
                """
            ).all()).isEmpty
        }
    }

    /// Deliveries given up, newest first.
    public func failedWebhooks(limit: Int) async throws -> [FailedWebhook] {
        try await database.read(
            """
            SELECT id, event_id, event_type, url, body, attempts, last_error, failed_at FROM webhook_outbox
            WHERE status = 'failed' ORDER BY failed_at DESC, id LIMIT \(bind: limit)
            """
        ).map { row in
            let lastError = try row.optionalString("last_error")
            return FailedWebhook(
                id: try row.string("id"),
                eventID: try row.string("event_id"),
                type: try row.string("event_type"),
                accountID: Self.accountID(inWebhookBody: try row.string("body")),
                url: try row.string("url"),
                attempts: try row.decode(column: "attempts", as: Int.self),
                lastStatus: lastError.flatMap { $0.hasPrefix("HTTP ") ? Int($0.dropFirst(5)) : nil },
                failedAt: try row.date("failed_at")
            )
        }
    }

    /// The event's `account_id`, from the body the receiver is sent.
    private static func accountID(inWebhookBody body: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["account_id"] as? String
    }

    /// Makes a failed delivery pending from `now`: no attempts yet, its retry window starting again.
    public func retryWebhook(id: String, at now: Date) async throws -> Bool {
        try await database.withDatabase { db in
            !(try await db.raw(
                """
                UPDATE webhook_outbox SET status = 'pending', attempts = 0, next_attempt_at = \(bind: now.milliseconds),
                    created_at = \(bind: now.milliseconds), lease_until = NULL, last_error = NULL, failed_at = NULL
                WHERE id = \(bind: id) AND status = 'failed'
                RETURNING id
                """
            ).all()).isEmpty
        }
    }

    /// Notifications older than the one `before`, newest first, through the `(received_at, jti)` index.
    public func notifications(before: String?, limit: Int) async throws -> [ReceivedNotification]? {
        var condition: SQLQueryString = ""
        if let before {
            guard let row = try await database.read("SELECT received_at FROM notification_inbox WHERE jti = \(bind: before)").first else {
                return nil
            }
            let at = try row.decode(column: "received_at", as: Int64.self)
            condition = "WHERE (received_at < \(bind: at) OR (received_at = \(bind: at) AND jti < \(bind: before)))"
        }
        return try await database.read(
            """
            SELECT jti, received_at, client_id, event_type, outcome, processed_at, account_id, duplicates FROM notification_inbox
            \(condition) ORDER BY received_at DESC, jti DESC LIMIT \(bind: limit)
            """
        ).map { row in
            ReceivedNotification(
                id: try row.string("jti"),
                receivedAt: try row.date("received_at") ?? Date(timeIntervalSince1970: 0),
                clientID: try row.optionalString("client_id"),
                type: try row.string("event_type"),
                outcome: ReceivedNotification.outcome(stored: try row.optionalString("outcome"), processed: try row.date("processed_at") != nil),
                accountID: try row.optionalString("account_id"),
                duplicates: try row.decode(column: "duplicates", as: Int.self)
            )
        }
    }

    /// Counts per client id over the inbox's last 7 days (it keeps 30), and the accounts the daily validation found
    /// revoked in those days: a notification would have revoked the credential first, so each of those is one Apple
    /// did not announce here.
    public func delivery(now: Date) async throws -> [DeliveryCounts] {
        let day = now.addingTimeInterval(-86_400).milliseconds
        let week = now.addingTimeInterval(-7 * 86_400).milliseconds
        var counts: [String: DeliveryCounts] = [:]
        let received = try await database.read(
            """
            SELECT client_id, MAX(received_at) AS last_at,
                SUM(CASE WHEN received_at >= \(bind: day) THEN 1 ELSE 0 END) AS day_count,
                SUM(CASE WHEN received_at >= \(bind: week) THEN 1 ELSE 0 END) AS week_count,
                SUM(CASE WHEN received_at >= \(bind: week) THEN duplicates ELSE 0 END) AS week_duplicates,
                SUM(CASE WHEN received_at >= \(bind: week) AND outcome = \(bind: InboxOutcome.Kind.unknownSubject.rawValue) THEN 1 ELSE 0 END) AS week_unknown
            FROM notification_inbox WHERE client_id IS NOT NULL GROUP BY client_id
            """
        )
        for row in received {
            let clientID = try row.string("client_id")
            var entry = DeliveryCounts(clientID: clientID)
            entry.lastReceivedAt = try row.date("last_at")
            entry.received24h = try row.decode(column: "day_count", as: Int.self)
            entry.received7d = try row.decode(column: "week_count", as: Int.self)
            entry.duplicates7d = try row.decode(column: "week_duplicates", as: Int.self)
            entry.unknownSubject7d = try row.decode(column: "week_unknown", as: Int.self)
            counts[clientID] = entry
        }
        let unannounced = try await database.read(
            """
            SELECT a.client_id AS client_id, COUNT(DISTINCT e.account_id) AS revoked FROM account_events e
            JOIN accounts a ON a.id = e.account_id
            WHERE e.occurred_at >= \(bind: week) AND e.type = 'credential_revoked' AND e.reason = 'invalid_grant'
            GROUP BY a.client_id
            """
        )
        for row in unannounced {
            let clientID = try row.string("client_id")
            counts[clientID, default: DeliveryCounts(clientID: clientID)].revokedWithoutNotification7d = try row.decode(
                column: "revoked",
                as: Int.self
            )
        }
        return counts.values.sorted { $0.clientID < $1.clientID }
    }
}

extension SQLAccountStore: EmailHashBackfillStore {
    private static let emailHashesFilledSetting = "email_hashes_filled"

    /// Whether the backfill finished once.
    public func emailHashesFilled() async throws -> Bool {
        try await !database.read("SELECT value FROM orchard_settings WHERE name = \(bind: Self.emailHashesFilledSetting)").isEmpty
    }

    /// Accounts with an email and no email hash, by id.
    public func accountsWithoutEmailHash(afterID: String?, limit: Int) async throws -> [(id: String, sealedEmail: String)] {
        try await database.read(
            """
            SELECT id, sealed_email FROM accounts
            WHERE id > \(bind: afterID ?? "") AND sealed_email IS NOT NULL AND email_hash IS NULL
            ORDER BY id LIMIT \(bind: limit)
            """
        ).map { (try $0.string("id"), try $0.string("sealed_email")) }
    }

    /// Sets the hash while the account still holds that sealed email.
    public func setEmailHash(accountID: String, sealedEmail: String, hash: String) async throws {
        try await database.withDatabase { db in
            try await db.raw(
                """
                UPDATE accounts SET email_hash = \(bind: hash)
                WHERE id = \(bind: accountID) AND sealed_email = \(bind: sealedEmail) AND email_hash IS NULL
                """
            ).run()
        }
    }

    /// Records that the backfill finished.
    public func markEmailHashesFilled() async throws {
        try await database.withDatabase { db in
            try await db.raw(
                """
                INSERT INTO orchard_settings (name, value) VALUES (\(bind: Self.emailHashesFilledSetting), '1')
                ON CONFLICT (name) DO NOTHING
                """
            ).run()
        }
    }
}
