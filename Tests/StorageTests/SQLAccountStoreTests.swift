import AppleID
import Foundation
import Logging
import OrchardTesting
import SQLKit
import Testing

@testable import Accounts
@testable import Storage

/// One conformance suite for every Storage implementation: each test runs on SQLite and, when a test cluster is
/// reachable, on PostgreSQL; the tests of what the lifecycle relies on (``StoreUnderTest``) on the in-memory store too.
@Suite struct SQLAccountStoreTests {
    static let backends = TestDatabase.passBackends

    func withStore(_ backend: TestDatabase.Backend, _ body: (SQLAccountStore, any DatabaseClient) async throws -> Void) async throws {
        let database = try await TestDatabase.make(backend)
        do {
            try await Migrator(database: database.client, logger: Logger(label: "test")).migrate()
            try await body(TestDatabase.store(database.client), database.client)
        } catch {
            await database.remove()
            throw error
        }
        await database.remove()
    }

    @Test("PostgreSQL is reachable under CI=true (the conformance suite must not skip it there)")
    func postgresPresentInCI() {
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            #expect(TestDatabase.postgresAdminURL != nil, "CI must run the suite against PostgreSQL: scripts/ci-setup starts a cluster")
        }
    }

    /// Records the first sign-in of an account (`acct_1` with subject hash `s` unless told) at `now`, with its session
    /// (`t1` unless told) for 60 s.
    func signInFirstAccount(
        _ store: any Lifecycle.Store,
        at now: Date,
        id: String = "acct_1",
        subjectHash: String = "s",
        tokenHash: String = "t1"
    ) async throws {
        _ = try await store.recordSignIn(
            SignInRecord(
                account: AccountRecord.fixture(id: id, subjectHash: subjectHash, at: now),
                isNew: true,
                session: SessionRecord(
                    id: "sess_\(tokenHash)",
                    tokenHash: tokenHash,
                    accountID: id,
                    createdAt: now,
                    expiresAt: now.addingTimeInterval(60)
                ),
                history: []
            )
        )
    }

    @Test("migrations run once and report the schema version", arguments: Self.backends)
    func migrationsIdempotent(_ backend: TestDatabase.Backend) async throws {
        try await withStore(backend) { _, database in
            let migrator = Migrator(database: database, logger: Logger(label: "test"))
            let applied = try await migrator.migrate()
            let version = try await migrator.currentVersion()
            #expect(applied.isEmpty)
            #expect(version == Migrator.latestVersion)
        }
    }

    @Test("migration 9 gives each session from before it a random id of its own, and sessions then list by account", arguments: Self.backends)
    func sessionIDsBackfilled(_ backend: TestDatabase.Backend) async throws {
        try await withStore(backend) { store, database in
            let now = Date()
            let millis = Int64(now.timeIntervalSince1970 * 1000)
            try await signInFirstAccount(store, at: now)
            // Back to the schema before version 9, with sessions written by that version.
            try await database.withDatabase { db in
                for statement in [
                    "DROP INDEX sessions_id", "ALTER TABLE sessions DROP COLUMN id", "ALTER TABLE sessions DROP COLUMN sealed_device",
                    "ALTER TABLE sessions DROP COLUMN last_seen_at", "DELETE FROM schema_migrations WHERE version = 9",
                ] {
                    try await db.raw(SQLQueryString(statement)).run()
                }
                for index in 2...4 {
                    try await db.raw(
                        """
                        INSERT INTO sessions (token_hash, account_id, created_at, expires_at)
                        VALUES (\(bind: "t\(index)"), 'acct_1', \(bind: millis + Int64(index)), \(bind: millis + 60_000))
                        """
                    ).run()
                }
            }
            let applied = try await Migrator(database: database, logger: Logger(label: "test")).migrate()
            #expect(applied == [9])
            let live = try await store.liveSessions(accountID: "acct_1", now: now)
            #expect(live.map(\.tokenHash) == ["t4", "t3", "t2", "t1"])
            #expect(Set(live.map(\.id)).count == 4)
            for session in live { #expect(session.id.wholeMatch(of: /sess_[0-9a-f]{32}/) != nil, "\(session.id)") }
            #expect(try await store.endSession(id: live[1].id, accountID: "acct_1", reason: .signedOut, cause: .user, at: now))
            #expect(try await store.endSession(id: live[1].id, accountID: "acct_1", reason: .signedOut, cause: .user, at: now) == false)
            #expect(try await store.endSession(id: live[2].id, accountID: "acct_2", reason: .signedOut, cause: .user, at: now) == false)
            #expect(try await store.liveSessions(accountID: "acct_1", now: now).count == 3)
        }
    }

    @Test("a nonce is consumed once, then reported reused; unknown and expired ones are told apart from reuse", arguments: StoreUnderTest.all)
    func nonces(_ kind: StoreUnderTest) async throws {
        try await kind.with { store in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            try await store.insertNonce(hash: "h1", expiresAt: now.addingTimeInterval(600))
            try await store.insertNonce(hash: "h2", expiresAt: now.addingTimeInterval(600))
            #expect(try await store.consumeNonce(hashes: ["h1"], now: now) == .consumed)
            #expect(try await store.consumeNonce(hashes: ["h1"], now: now) == .alreadyConsumed)
            #expect(try await store.consumeNonce(hashes: ["never"], now: now) == .unknownOrExpired)
            #expect(try await store.consumeNonce(hashes: ["h2"], now: now.addingTimeInterval(601)) == .unknownOrExpired)
        }
    }

    @Test("a new account with a subject hash that already exists is a conflict, and nothing of it is stored", arguments: StoreUnderTest.all)
    func conflict(_ kind: StoreUnderTest) async throws {
        try await kind.with { store in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            let first = AccountRecord.fixture(id: "acct_1", subjectHash: "same", at: now)
            _ = try await store.recordSignIn(
                SignInRecord(
                    account: first,
                    isNew: true,
                    session: SessionRecord(
                        id: "sess_t1",
                        tokenHash: "t1",
                        accountID: "acct_1",
                        createdAt: now,
                        expiresAt: now.addingTimeInterval(60)
                    ),
                    history: []
                )
            )
            let second = AccountRecord.fixture(id: "acct_2", subjectHash: "same", at: now)
            await #expect(throws: StoreError.conflict) {
                _ = try await store.recordSignIn(
                    SignInRecord(
                        account: second,
                        isNew: true,
                        session: SessionRecord(
                            id: "sess_t2",
                            tokenHash: "t2",
                            accountID: "acct_2",
                            createdAt: now,
                            expiresAt: now.addingTimeInterval(60)
                        ),
                        history: []
                    )
                )
            }
            #expect(try await store.session(tokenHash: "t2") == nil)
            #expect(try await store.session(tokenHash: "t1")?.account?.id == "acct_1")
            #expect(try await store.account(id: "acct_2") == nil)
            #expect(try await store.account(subjectHashes: ["other", "same"])?.id == "acct_1")
            #expect(try await store.accounts(limit: 10, afterID: nil).map(\.id) == ["acct_1"])
        }
    }

    @Test(
        "a returning sign-in into an account deleted meanwhile stores no session and queues the new grant's revocation",
        arguments: StoreUnderTest.all
    )
    func signInIntoDeletedAccount(_ kind: StoreUnderTest) async throws {
        try await kind.with { store in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            let gone = AccountRecord.fixture(id: "acct_gone", subjectHash: "g", at: now)
            let job = RevocationJob(
                id: "rev_fresh",
                clientID: "com.example.app",
                sealedToken: "sealed",
                hint: .refreshToken,
                attempts: 0,
                nextAttemptAt: now,
                leaseUntil: nil,
                lastError: nil,
                createdAt: now
            )
            let recorded = try await store.recordSignIn(
                SignInRecord(
                    account: gone,
                    isNew: false,
                    session: SessionRecord(
                        id: "sess_t9",
                        tokenHash: "t9",
                        accountID: "acct_gone",
                        createdAt: now,
                        expiresAt: now.addingTimeInterval(60)
                    ),
                    history: [],
                    revocationIfGone: job
                )
            )
            #expect(!recorded)
            #expect(try await store.session(tokenHash: "t9") == nil)
            #expect(try await store.account(id: "acct_gone") == nil)
            #expect(try await store.pendingRevocations(limit: 10).map(\.id) == ["rev_fresh"])
        }
    }

    @Test(
        "a nonce read refuses without consuming, a session read sees its account, and an ending is seen by the next read",
        arguments: StoreUnderTest.all
    )
    func reads(_ kind: StoreUnderTest) async throws {
        try await kind.with { store in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            try await store.insertNonce(hash: "issued", expiresAt: now.addingTimeInterval(600))
            try await store.insertNonce(hash: "used", expiresAt: now.addingTimeInterval(600))
            #expect(try await store.consumeNonce(hashes: ["used"], now: now) == .consumed)
            try await signInFirstAccount(store, at: now)
            let refusals: [(hashes: [String], at: Date, outcome: NonceConsumption)] = [
                (["used"], now, .alreadyConsumed),
                (["never"], now, .unknownOrExpired),
                (["issued"], now.addingTimeInterval(601), .unknownOrExpired),
                ([], now, .unknownOrExpired),
            ]
            for (hashes, at, outcome) in refusals {
                #expect(try await store.consumeNonce(hashes: hashes, now: at) == outcome, "\(hashes)")
            }
            // The refusals consumed nothing: the issued nonce is still there to consume once.
            #expect(try await store.consumeNonce(hashes: ["issued"], now: now) == .consumed)

            let found = try #require(try await store.session(tokenHash: "t1"))
            #expect(found.account?.id == "acct_1")
            #expect(found.session.endReason == nil)
            #expect(try await store.session(tokenHash: "unknown") == nil)
            // An ended session is seen ended by the very next read.
            #expect(try await store.endSession(tokenHash: "t1", reason: .signedOut, cause: .user, at: now))
            #expect(try await store.session(tokenHash: "t1")?.session.endReason == .signedOut)
        }
    }

    @Test("one read of several token hashes finds each session with its own account, and nothing for an unknown one", arguments: Self.backends)
    func severalSessions(_ backend: TestDatabase.Backend) async throws {
        try await withStore(backend) { store, _ in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            try await signInFirstAccount(store, at: now)
            try await signInFirstAccount(store, at: now, id: "acct_2", subjectHash: "s2", tokenHash: "t2")
            let found = try await store.sessions(tokenHashes: ["t2", "unknown", "t1"])
            #expect(Set(found.map { "\($0.session.tokenHash)=\($0.account?.id ?? "")" }) == ["t1=acct_1", "t2=acct_2"])
            #expect(try await store.sessions(tokenHashes: ["t2"]).map(\.account?.id) == ["acct_2"])
            #expect(try await store.sessions(tokenHashes: ["unknown", "other"]).isEmpty)
        }
    }

    @Test("a session ends once, with its reason", arguments: StoreUnderTest.all)
    func sessions(_ kind: StoreUnderTest) async throws {
        try await kind.with { store in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            try await signInFirstAccount(store, at: now)
            #expect(try await store.endSession(tokenHash: "t1", reason: .signedOut, cause: .user, at: now))
            #expect(try await store.endSession(tokenHash: "t1", reason: .accountDeleted, cause: .user, at: now) == false)
            let found = try #require(try await store.session(tokenHash: "t1"))
            #expect(found.session.endReason == .signedOut)
            #expect(found.account?.id == "acct_1" && found.account?.sealedSubject == "v1.k.s")
            #expect(found.session.expiresAt == now.addingTimeInterval(60))
            try await store.checkReachable()
        }
    }

    static func insertRevocations(_ count: Int, due: Date, into database: any DatabaseClient) async throws {
        try await database.transaction { db in
            for index in 0..<count {
                try await db.raw(
                    """
                    INSERT INTO revocations (id, client_id, sealed_token, token_type_hint, attempts, next_attempt_at, created_at)
                    VALUES (\(bind: "rev_\(index)"), 'com.example.app', 'v1.k.x', 'refresh_token', 0, \(bind: Int64(due.timeIntervalSince1970 * 1000)),
                        \(bind: Int64(due.timeIntervalSince1970 * 1000)))
                    """
                ).run()
            }
        }
    }

    @Test("concurrent claimers never get the same job, and together get every one", arguments: Self.backends)
    func concurrentClaims(_ backend: TestDatabase.Backend) async throws {
        try await withStore(backend) { store, database in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            try await Self.insertRevocations(60, due: now, into: database)
            let claims = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        var mine: [String] = []
                        while true {
                            let batch = try await store.claimRevocations(now: now, leaseUntil: now.addingTimeInterval(60), limit: 4)
                            if batch.isEmpty { return mine }
                            mine += batch.map(\.id)
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            #expect(claims.count == 60)
            #expect(Set(claims).count == 60)
        }
    }

    @Test("a claimed job is taken over only after its lease, and a finished one never again", arguments: Self.backends)
    func leases(_ backend: TestDatabase.Backend) async throws {
        try await withStore(backend) { store, database in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            try await Self.insertRevocations(2, due: now, into: database)
            let first = try await store.claimRevocations(now: now, leaseUntil: now.addingTimeInterval(60), limit: 10)
            #expect(first.count == 2)
            #expect(try await store.claimRevocations(now: now.addingTimeInterval(30), leaseUntil: now.addingTimeInterval(90), limit: 10).isEmpty)
            try await store.completeRevocations([JobResult(job: first[0], outcome: .done)], at: now.addingTimeInterval(1))
            let takenOver = try await store.claimRevocations(now: now.addingTimeInterval(61), leaseUntil: now.addingTimeInterval(121), limit: 10)
            #expect(takenOver.map(\.id) == [first[1].id])
            try await store.completeRevocations(
                [JobResult(job: first[1], outcome: .retry(at: now.addingTimeInterval(200), error: "apple_unavailable"))],
                at: now.addingTimeInterval(62)
            )
            #expect(try await store.claimRevocations(now: now.addingTimeInterval(199), leaseUntil: now.addingTimeInterval(260), limit: 10).isEmpty)
            #expect(try await store.claimRevocations(now: now.addingTimeInterval(200), leaseUntil: now.addingTimeInterval(260), limit: 10).count == 1)
        }
    }

    @Test("two migrators starting together on an empty database both succeed, and the schema is applied once", arguments: Self.backends)
    func concurrentMigrations(_ backend: TestDatabase.Backend) async throws {
        let database = try await TestDatabase.make(backend)
        do {
            async let first = Migrator(database: database.client, logger: Logger(label: "a")).migrate()
            async let second = Migrator(database: database.client, logger: Logger(label: "b")).migrate()
            let (a, b) = try await (first, second)
            #expect((a + b).sorted() == Array(1...Migrator.latestVersion))
            let salts = try await database.client.withDatabase { db in
                try await db.raw("SELECT COUNT(*) AS n FROM orchard_settings WHERE name = 'audit_salt'").first()?.decode(column: "n", as: Int.self)
            }
            #expect(salts == 1)
        } catch {
            await database.remove()
            throw error
        }
        await database.remove()
    }
}
