import Foundation
import OrchardTesting
import SQLKit
import Storage
import Testing

extension SQLAccountStoreTests {
    /// The index each of today's claims must start from; a new job table declares its own (``JobTable/dueIndex``).
    static let dueIndexes: [String: String] = [
        "revocations": "revocations_next_attempt_at",
        "notification_inbox": "notification_inbox_next_attempt_at",
        "webhook_outbox": "webhook_outbox_status_next_attempt_at",
        "accounts": "accounts_next_validation_at",
    ]

    /// The query plan of `query`, one line a step. On PostgreSQL with sequential scans priced out: an empty table makes
    /// any plan cheap, and a plan that still scans the table has no index to use.
    static func plan(of query: SQLQueryString, on database: any DatabaseClient) async throws -> String {
        switch database.flavor {
        case .sqlite:
            return try await database.withDatabase { db in
                try await db.raw("EXPLAIN QUERY PLAN \(query)").all().map { try $0.decode(column: "detail", as: String.self) }
            }.joined(separator: "\n")
        case .postgres:
            return try await database.transaction { db in
                try await db.raw("SET LOCAL enable_seqscan = off").run()
                return try await db.raw("EXPLAIN \(query)").all().map { try $0.decode(column: "QUERY PLAN", as: String.self) }
            }.joined(separator: "\n")
        }
    }

    @Test("every claim reads its table through the due-time index, never a full scan", arguments: Self.backends)
    func claimsUseDueIndexes(_ backend: TestDatabase.Backend) async throws {
        #expect(Set(JobTable.all.map(\.table)).isSuperset(of: Self.dueIndexes.keys))
        try await withStore(backend) { store, database in
            for job in JobTable.all {
                let table = job.table
                let index = Self.dueIndexes[table] ?? job.dueIndex
                #expect(index == job.dueIndex, "\(job) declares \(job.dueIndex), not \(index)")
                let plan = try await Self.plan(of: store.dueRows(job, now: Date(), limit: 32), on: database)
                switch database.flavor {
                case .sqlite:
                    #expect(plan.contains("SEARCH \(table) USING INDEX \(index)"), "\(job): \(plan)")
                    #expect(!plan.contains("SCAN \(table)"), "\(job) scans the whole table: \(plan)")
                case .postgres:
                    let ranges = ["Index Scan using \(index) on \(table)", "Bitmap Index Scan on \(index)"]
                    #expect(ranges.contains { plan.contains($0) }, "\(job): \(plan)")
                    #expect(!plan.contains("Seq Scan"), "\(job) scans the whole table: \(plan)")
                    #expect(plan.contains("LockRows"), "\(job) does not lock the rows it claims: \(plan)")
                }
            }
        }
    }

    @Test(
        "a deletion finds its subject's notifications that hold a sealed event through an index of those only, never a full scan",
        arguments: Self.backends
    )
    func deletionFindsWaitingNotificationsThroughIndex(_ backend: TestDatabase.Backend) async throws {
        try await withStore(backend) { _, database in
            let statement = SQLAccountStore.closeWaitingNotifications(subjectDigest: String(repeating: "a", count: 64), accountID: "acct_x", at: 1)
            let index = "notification_inbox_sealed_subject"
            let plan = try await Self.plan(of: statement, on: database)
            switch database.flavor {
            case .sqlite:
                #expect(plan.contains("SEARCH notification_inbox USING INDEX \(index)"), "\(plan)")
                let definition = try await database.read("SELECT sql FROM sqlite_master WHERE name = \(bind: index)").first
                    .map { try $0.decode(column: "sql", as: String.self) }
                #expect(
                    definition?.contains("WHERE sealed_event IS NOT NULL") == true,
                    "it holds the rows with a sealed event only: \(definition ?? "none")"
                )
            case .postgres:
                #expect(["Index Scan using \(index)", "Bitmap Index Scan on \(index)"].contains { plan.contains($0) }, "\(plan)")
                #expect(!plan.contains("Seq Scan"), "\(plan)")
                let definition = try await database.read("SELECT indexdef FROM pg_indexes WHERE indexname = \(bind: index)").first
                    .map { try $0.decode(column: "indexdef", as: String.self) }
                #expect(
                    definition?.contains("WHERE (sealed_event IS NOT NULL)") == true,
                    "it holds the rows with a sealed event only: \(definition ?? "none")"
                )
            }
        }
    }
}
