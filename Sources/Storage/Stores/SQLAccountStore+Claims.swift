public import Foundation
public import SQLKit

/// Where one kind of background job waits in the database, and how a claim finds its due rows.
///
/// Every claim is the same statement over a different table: lease the oldest due rows nobody holds, through the
/// table's due-time index. A new job kind declares its table here (and lists it in ``all``, which the storage tests
/// `EXPLAIN` on every backend).
public struct JobTable: Sendable, Hashable, CustomStringConvertible {
    /// The table.
    public let table: String
    /// The index on the due-time column a claim must start from.
    public let dueIndex: String
    /// The primary key a claim picks rows by.
    let key: String
    /// The due-time column; a finished row has none, so it leaves the index's due range.
    let dueColumn: String
    /// What else a due row satisfies (constant SQL, no binds).
    let condition: String?
    /// The lease column.
    let leaseColumn: String

    /// The table's name.
    public var description: String { table }

    /// Tokens waiting for Apple's `/auth/revoke`.
    public static let revocations = JobTable(
        table: "revocations",
        dueIndex: "revocations_next_attempt_at",
        key: "id",
        dueColumn: "next_attempt_at",
        condition: nil,
        leaseColumn: "lease_until"
    )
    /// Apple's notifications waiting to be acted on.
    public static let notifications = JobTable(
        table: "notification_inbox",
        dueIndex: "notification_inbox_next_attempt_at",
        key: "jti",
        dueColumn: "next_attempt_at",
        condition: "processed_at IS NULL",
        leaseColumn: "lease_until"
    )
    /// Webhook deliveries waiting to be sent.
    public static let webhooks = JobTable(
        table: "webhook_outbox",
        dueIndex: "webhook_outbox_status_next_attempt_at",
        key: "id",
        dueColumn: "next_attempt_at",
        condition: "status = 'pending'",
        leaseColumn: "lease_until"
    )
    /// Accounts whose refresh token is due for validation. The claim leases the account in a column of its own and
    /// leaves its due time alone, so an account whose holder died keeps its place in the queue.
    public static let validations = JobTable(
        table: "accounts",
        dueIndex: "accounts_next_validation_at",
        key: "id",
        dueColumn: "next_validation_at",
        // `unknown` with a token held: an imported refresh token, whose first validation sets its state.
        condition: "apple_credential <> 'revoked' AND sealed_refresh_token IS NOT NULL",
        leaseColumn: "validation_lease_until"
    )

    /// Every job table.
    public static let all: [JobTable] = [.revocations, .notifications, .webhooks, .validations]
}

extension SQLAccountStore {
    /// The subquery that picks the rows a claim takes: at most `limit` rows of `jobs` whose due time has come and that
    /// no live lease holds, oldest first, locked with ``lockingClause``.
    ///
    /// The range starts at the table's due-time index, and finished rows have no due time, so a tick reads only due rows
    /// however large the table grows. Each claim runs this inside its `UPDATE`; the storage tests `EXPLAIN` it on every
    /// backend to hold that promise.
    public func dueRows(_ jobs: JobTable, now: Date, limit: Int) -> SQLQueryString {
        let now = now.milliseconds
        var query: SQLQueryString = """
            SELECT \(unsafeRaw: jobs.key) FROM \(unsafeRaw: jobs.table)
            WHERE \(unsafeRaw: jobs.dueColumn) <= \(bind: now)
            """
        if let condition = jobs.condition {
            query += " AND \(unsafeRaw: condition)"
        }
        query += " AND (\(unsafeRaw: jobs.leaseColumn) IS NULL OR \(unsafeRaw: jobs.leaseColumn) <= \(bind: now))"
        query += " ORDER BY \(unsafeRaw: jobs.dueColumn) LIMIT \(bind: limit) \(unsafeRaw: lockingClause)"
        return query
    }

    /// Claims up to `limit` due rows of `jobs` nobody holds, in one `UPDATE` that leases them until `leaseUntil`;
    /// returns them decoded from `columns`.
    func claim<Job: Sendable>(
        _ jobs: JobTable,
        now: Date,
        leaseUntil: Date,
        limit: Int,
        returning columns: String,
        as decode: @escaping @Sendable (any SQLRow) throws -> Job
    ) async throws -> [Job] {
        let candidates = dueRows(jobs, now: now, limit: limit)
        return try await database.transaction { db in
            try await db.raw(
                """
                UPDATE \(unsafeRaw: jobs.table) SET \(unsafeRaw: jobs.leaseColumn) = \(bind: leaseUntil.milliseconds)
                WHERE \(unsafeRaw: jobs.key) IN (\(candidates))
                RETURNING \(unsafeRaw: columns)
                """
            ).all().map(decode)
        }
    }
}
