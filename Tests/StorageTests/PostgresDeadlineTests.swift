import Accounts
import Logging
import OrchardTesting
import SQLKit
import Storage
import Testing

/// The per-operation deadline on PostgreSQL ends a statement that runs too long (closing its connection), and the
/// migrator's deadline-free view of the same pool lets one finish.
@Suite(
    "PostgreSQL: the deadline, and the migrator's view without it",
    .enabled(if: TestDatabase.selectedBackend == .postgres, "needs the PostgreSQL pass")
)
struct PostgresDeadlineTests {
    /// Runs `body` with a client of its own, on a fresh, migrated database, with a 0.5 s deadline: an operation may take
    /// 1 s. Both are removed afterwards.
    static func withClient(_ body: (PostgresDatabaseClient) async throws -> Void) async throws {
        let database = try await TestDatabase.make(.postgres)
        guard case .postgres(let url) = database.url else { throw CancellationError() }
        let client = try PostgresDatabaseClient.open(url: url, poolSize: 3, caFile: nil, deadline: .milliseconds(500), logger: Logger(label: "test"))
        do {
            try await body(client)
        } catch {
            await client.close()
            await database.remove()
            throw error
        }
        await client.close()
        await database.remove()
    }

    @Test("a statement past twice the deadline is storage_unavailable at once, on the same pool without it it finishes")
    func deadline() async throws {
        try await Self.withClient { client in
            let started = ContinuousClock.now
            await #expect(throws: StoreError.unavailable("PostgreSQL did not answer in time")) {
                try await client.withDatabase { db in try await db.raw("SELECT pg_sleep(20)").run() }
            }
            let took = ContinuousClock.now - started
            // Answered at the deadline, not when the statement would have ended (a wide margin for a loaded machine).
            #expect(took < .seconds(10), "answered after \(took)")

            // The pool recovers: the next operation gets a working connection.
            let one = try await client.withDatabase { db in try await db.raw("SELECT 1 AS one").first()?.decode(column: "one", as: Int.self) }
            #expect(one == 1)

            // Without the deadline, the same pool lets a statement run past it.
            let slept = try await client.withoutDeadline.transaction { db in
                try await db.raw("SELECT pg_sleep(1.5)").run()
                return true
            }
            #expect(slept)
        }
    }

    @Test("a migration waiting past the deadline for another replica's migration lock completes")
    func migrationWaits() async throws {
        try await Self.withClient { client in
            // Another replica's migration holds the lock for 1.5 s, past the 1 s an operation may take.
            let holder = Task {
                try await client.withoutDeadline.transaction { db in
                    try await db.raw("SELECT pg_advisory_xact_lock(7262634) AS locked").run()
                    try await Task.sleep(for: .milliseconds(1500))
                }
            }
            defer { holder.cancel() }
            let held = await eventually(timeout: 10) {
                let rows = try? await client.withDatabase { db in
                    try await db.raw("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 7262634 AND granted").all()
                }
                return rows?.isEmpty == false
            }
            #expect(held, "the holder never took the migration lock")

            let started = ContinuousClock.now
            try await Migrator(database: client, logger: Logger(label: "test")).migrate()
            #expect(ContinuousClock.now - started > .seconds(1), "the migration did not wait for the lock")
            try await holder.value
        }
    }
}
