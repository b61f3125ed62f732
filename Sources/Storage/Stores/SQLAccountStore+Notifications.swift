public import Accounts
public import Foundation
import SQLKit

extension SQLAccountStore: NotificationInbox {
    /// The columns an ``InboxEntry`` is read from.
    static let inboxColumns = "jti, received_at, event_type, subject_digest, sealed_event, attempts"

    /// Stores a notification unless its `jti` is known; a known one is counted as a duplicate. One statement either
    /// way: the row's `duplicates` tells which happened.
    public func insertNotification(_ entry: InboxEntry, nextAttemptAt: Date) async throws -> Bool {
        try await database.withDatabase { db in
            let row = try await db.raw(
                """
                INSERT INTO notification_inbox (jti, received_at, event_type, subject_digest, sealed_event, attempts, next_attempt_at,
                    client_id)
                VALUES (\(bind: entry.jti), \(bind: entry.receivedAt.milliseconds), \(bind: entry.eventType), \(bind: entry.subjectDigest),
                    \(bind: entry.sealedEvent), 0, \(bind: nextAttemptAt.milliseconds), \(bind: entry.clientID))
                ON CONFLICT (jti) DO UPDATE SET duplicates = notification_inbox.duplicates + 1
                RETURNING duplicates
                """
            ).first()
            return try row?.decode(column: "duplicates", as: Int.self) == 0
        }
    }

    /// Claims due, unprocessed notifications.
    public func claimNotifications(now: Date, leaseUntil: Date, limit: Int) async throws -> [InboxEntry] {
        try await claim(.notifications, now: now, leaseUntil: leaseUntil, limit: limit, returning: Self.inboxColumns, as: Self.inboxEntry(from:))
    }

    /// Records a batch: finished notifications not yet marked processed are marked with their outcome (given-up ones
    /// with `failed`) and lose their sealed event; the others are released with one more attempt.
    public func completeNotifications(_ results: [JobResult<InboxEntry, InboxOutcome>], at now: Date) async throws {
        var finished: [String: [(jti: String, accountID: String?)]] = [:]
        var retries: [(jti: String, attempts: Int, next: Int64)] = []
        for result in results {
            switch result.outcome {
            case .done(let outcome):
                finished[outcome.name, default: []].append((result.job.jti, outcome.accountID))
            case .failed:
                finished[InboxOutcome.Kind.failed.rawValue, default: []].append((result.job.jti, nil))
            case .retry(let next, _):
                retries.append((result.job.jti, result.job.attempts + 1, next.milliseconds))
            }
        }
        let at = now.milliseconds
        let digests = Array(Set(results.map(\.job.subjectDigest)))
        let deletedSubjectEvents = try await database.transaction { [finished, retries] db in
            var closed = false
            for (outcome, entries) in finished.sorted(by: { $0.key < $1.key }) {
                let known = entries.filter { $0.accountID != nil }
                let accounts: SQLQueryString = known.isEmpty ? "account_id" : Self.accountIDs(known)
                let rows = try await db.raw(
                    """
                    UPDATE notification_inbox SET sealed_event = NULL, processed_at = \(bind: at), outcome = \(bind: outcome),
                        account_id = \(accounts), next_attempt_at = NULL, lease_until = NULL
                    WHERE jti IN (\(binds: entries.map(\.jti))) AND processed_at IS NULL
                    RETURNING jti
                    """
                ).all()
                closed = closed || !rows.isEmpty
            }
            for retry in retries {
                try await db.raw(
                    """
                    UPDATE notification_inbox SET attempts = \(bind: retry.attempts), next_attempt_at = \(bind: retry.next), lease_until = NULL
                    WHERE jti = \(bind: retry.jti) AND processed_at IS NULL
                    """
                ).run()
            }
            guard closed, !digests.isEmpty else { return false }
            return try await db.raw("SELECT subject_digest FROM audit_events WHERE subject_digest IN (\(binds: digests)) LIMIT 1")
                .first() != nil
        }
        // A dropped sealed event about a deleted user (say the consent-revoked Apple sends after Orchard revoked that
        // user's token) must not linger in the files either. Events about live or unknown subjects need no checkpoint
        // of their own: a flood of them would otherwise checkpoint the file once per batch, and the next deletion's
        // checkpoint empties the WAL anyway.
        if deletedSubjectEvents {
            try await database.purgeDeletedData()
        }
    }

    /// `CASE jti WHEN … THEN account_id … END`: each notification's account in one statement.
    static func accountIDs(_ pairs: [(jti: String, accountID: String?)]) -> SQLQueryString {
        var expression: SQLQueryString = "CASE jti"
        for pair in pairs { expression = expression + " WHEN \(bind: pair.jti) THEN \(bind: pair.accountID)" }
        return expression + " ELSE account_id END"
    }

    static func completeNotification(jti: String, outcome: InboxOutcome.Kind, accountID: String, at: Int64, in db: any SQLDatabase) async throws {
        try await db.raw(
            """
            UPDATE notification_inbox SET sealed_event = NULL, processed_at = \(bind: at), outcome = \(bind: outcome.rawValue),
                account_id = \(bind: accountID), next_attempt_at = NULL, lease_until = NULL
            WHERE jti = \(bind: jti)
            """
        ).run()
    }

    /// The inbox record of a notification.
    public func notification(jti: String) async throws -> InboxEntry? {
        try await database.read("SELECT \(unsafeRaw: Self.inboxColumns) FROM notification_inbox WHERE jti = \(bind: jti)").first
            .map(Self.inboxEntry(from:))
    }

    /// An inbox entry from its row.
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
}
