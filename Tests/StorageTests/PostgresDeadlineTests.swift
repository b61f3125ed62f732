import Accounts
import Logging
import OrchardTesting
import SQLKit
import Storage
import Synchronization
import Testing

/// The per-operation deadline on PostgreSQL ends a statement that runs too long (closing its connection), and the
/// migrator's deadline-free view of the same pool lets one finish.
@Suite(
    "PostgreSQL: the deadline, and the migrator's view without it",
    .enabled(if: TestDatabase.selectedBackend == .postgres, "needs the PostgreSQL pass")
)
struct PostgresDeadlineTests {
    /// Runs `body` with a client of its own, on a fresh, migrated database, with a 1 s operation deadline. With `statementTimeout`, the database sets it for every new session, as an operator may for Orchard's role.
    /// Both are removed afterwards.
    static func withClient(statementTimeout: String? = nil, _ body: (PostgresDatabaseClient) async throws -> Void) async throws {
        let database = try await TestDatabase.make(.postgres)
        guard case .postgres(let url) = database.url else { throw CancellationError() }
        if let statementTimeout {
            try await database.client.withDatabase { db in
                let name = try await db.raw("SELECT current_database() AS name").first()?.decode(column: "name", as: String.self) ?? ""
                try await db.raw("ALTER DATABASE \(ident: name) SET statement_timeout = \(unsafeRaw: "'" + statementTimeout + "'")").run()
            }
        }
        let (client, pool) = try await TestDatabase.runningPostgres(
            url: url,
            poolSize: 3,
            operationDeadline: .seconds(1),
            logger: Logger(label: "test")
        )
        do {
            try await body(client)
        } catch {
            pool.cancel()
            await database.remove()
            throw error
        }
        pool.cancel()
        await database.remove()
    }

    @Test("a statement past the operation deadline is storage_unavailable at once, on the same pool without it it finishes")
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

    @Test("a statement the server cancels at its statement_timeout is storage_unavailable, before the deadline")
    func serverTimeout() async throws {
        try await Self.withClient(statementTimeout: "300ms") { client in
            do {
                try await client.withDatabase { db in try await db.raw("SELECT pg_sleep(20)").run() }
                Issue.record("pg_sleep(20) finished")
            } catch let error as StoreError {
                #expect(error == .unavailable(""))
                #expect(error.reason != "PostgreSQL did not answer in time", "the deadline ended it, not the server")
            }
            // The migrator's view lifts it, with or without a transaction of the caller's.
            try await client.withoutDeadline.withDatabase { db in try await db.raw("SELECT pg_sleep(0.6)").run() }
            try await client.withoutDeadline.transaction { db in try await db.raw("SELECT pg_sleep(0.6)").run() }
            // The connection the server cancelled on is still good.
            let one = try await client.withDatabase { db in try await db.raw("SELECT 1 AS one").first()?.decode(column: "one", as: Int.self) }
            #expect(one == 1)
        }
    }

    @Test("a migration waiting past the deadline, and past the role's statement_timeout, for another replica's lock completes")
    func migrationWaits() async throws {
        try await Self.withClient(statementTimeout: "500ms") { client in
            // Another replica's migration holds the lock for 4 s, well past the 1 s an operation may take; it says when it
            // holds it.
            let (held, holding) = AsyncStream.makeStream(of: Void.self)
            // The holder's last instant before its commit, which releases the lock: a migration that waited for the
            // lock finishes after it, however late either task is resumed.
            let releasing = Mutex<ContinuousClock.Instant?>(nil)
            let holder = Task {
                defer { holding.finish() }
                try await client.withoutDeadline.transaction { db in
                    try await db.raw("SELECT pg_advisory_xact_lock(7262634) AS locked").run()
                    holding.yield()
                    try await Task.sleep(for: .seconds(4))
                    releasing.withLock { $0 = ContinuousClock.now }
                }
            }
            defer { holder.cancel() }
            var signals = held.makeAsyncIterator()
            _ = await signals.next()

            try await Migrator(database: client, logger: Logger(label: "test")).migrate()
            let migrated = ContinuousClock.now
            try await holder.value
            let release = try #require(releasing.withLock { $0 })
            #expect(migrated > release, "the migration finished before the other replica released its lock")
        }
    }
}
