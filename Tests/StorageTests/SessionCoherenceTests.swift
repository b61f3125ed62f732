import Foundation
import Logging
import OrchardTesting
import SQLKit
import ServiceLifecycle
import Testing

@testable import Accounts
@testable import Storage

/// Two replicas' pools on one PostgreSQL database, each answering session checks from memory: a session one of them
/// ends is refused by the other at once, and a registered replica that never acknowledges holds a change up for its
/// lease and no longer.
@Suite(
    "PostgreSQL: replicas' session memories stay coherent",
    .enabled(if: TestDatabase.selectedBackend == .postgres, "needs the PostgreSQL pass")
)
struct SessionCoherenceTests {
    struct Pair {
        let database: TestDatabase
        /// What the first replica sends its database (its keeper and stores go through it).
        let firstStatements: CountingDatabaseClient
        let first: SessionKeeper
        let second: SessionKeeper

        var stores: (SQLAccountStore, SQLAccountStore) { (SQLAccountStore(keeper: first), SQLAccountStore(keeper: second)) }
    }

    /// Two replicas, each with its own pool and keeper answering from memory, their services (the listener) running
    /// for the test's length, as `serve` runs them.
    static func withPair(_ body: (Pair) async throws -> Void) async throws {
        let database = try await TestDatabase.make(.postgres)
        guard case .postgres(let url) = database.url else { throw CancellationError() }
        try await Migrator(database: database.client, logger: Logger(label: "test")).migrate()
        let (secondClient, secondPool) = try await TestDatabase.runningPostgres(url: url, poolSize: 4, logger: Logger(label: "test"))
        let firstStatements = CountingDatabaseClient(database.client)
        // Entries outlive the test (serve's last a second): what a replica stops remembering, it stops remembering because
        // it heard of a change, never because its entry lapsed while a busy machine ran the test's steps.
        var timings = SessionTimings.replicas
        timings.entryLifetime = .seconds(600)
        let pair = Pair(
            database: database,
            firstStatements: firstStatements,
            first: SessionKeeper(
                database: firstStatements,
                backend: try #require(SessionBackend.of(database.client)),
                answering: true,
                timings: timings,
                logger: Logger(label: "test")
            ),
            second: SessionKeeper(
                database: secondClient,
                backend: try #require(SessionBackend.of(secondClient)),
                answering: true,
                timings: timings,
                logger: Logger(label: "test")
            )
        )
        let services = Task {
            try await withThrowingDiscardingTaskGroup { group in
                for service in pair.first.services + pair.second.services {
                    group.addTask { try await service.run() }
                }
            }
        }
        do {
            try await body(pair)
        } catch {
            services.cancel()
            _ = await services.result
            secondPool.cancel()
            await database.remove()
            throw error
        }
        services.cancel()
        _ = await services.result
        secondPool.cancel()
        await database.remove()
    }

    /// Signs in `account` with live sessions `tokens`.
    static func signIn(_ store: SQLAccountStore, account: String, tokens: [String]) async throws {
        let now = Date()
        for (index, token) in tokens.enumerated() {
            _ = try await store.recordSignIn(
                SignInRecord(
                    account: .fixture(id: account, subjectHash: "hash-\(account)", at: now),
                    isNew: index == 0,
                    session: SessionRecord(
                        id: "sess_\(token)",
                        tokenHash: token,
                        accountID: account,
                        createdAt: now,
                        expiresAt: now.addingTimeInterval(3_600)
                    ),
                    history: []
                )
            )
        }
    }

    /// Checks `token` through `store` until `client`'s memory answers for it (after the warm-up).
    static func warm(_ store: SQLAccountStore, _ keeper: SessionKeeper, _ token: String) async -> Bool {
        await eventually(timeout: 30) {
            _ = try? await store.checkSession(tokenHash: token)
            return keeper.memory?.lookup(token) != nil
        }
    }

    @Test("a sign-out on one replica, and an account's credential revoked on the other, are refused at once by both")
    func endsAreSeenEverywhere() async throws {
        try await Self.withPair { pair in
            let (first, second) = pair.stores
            try await Self.signIn(first, account: "acct_1", tokens: ["t1", "t2"])
            try await Self.signIn(first, account: "acct_2", tokens: ["t3"])
            for token in ["t1", "t2", "t3"] {
                #expect(await Self.warm(first, pair.first, token))
                #expect(await Self.warm(second, pair.second, token))
            }

            #expect(try await second.endSession(tokenHash: "t1", reason: .signedOut, cause: .user, at: Date()))
            // The very next check on the other replica refuses, though it remembered the session a moment ago.
            #expect(try await first.checkSession(tokenHash: "t1")?.session.endReason == .signedOut)
            #expect(pair.first.memory?.lookup("t2") != nil, "a sign-out drops only its own session")

            let outcome = try await first.apply(
                AccountChange(
                    accountID: "acct_1",
                    action: .revokeCredential,
                    webhooks: [],
                    completesNotification: nil,
                    condition: nil,
                    at: Date()
                )
            )
            #expect(outcome == .applied(revocation: nil))
            #expect(try await second.checkSession(tokenHash: "t2")?.session.endReason == .appleCredentialRevoked)
            #expect(pair.second.memory?.lookup("t3") != nil, "another account's session stays remembered")
        }
    }

    @Test("a registered replica that never acknowledges holds a sign-out up while its lease is current, and no longer")
    func silentReplica() async throws {
        try await Self.withPair { pair in
            let (first, second) = pair.stores
            try await Self.signIn(first, account: "acct_1", tokens: ["t1"])
            #expect(await Self.warm(second, pair.second, "t1"))
            // A replica that registered and then stopped renewing: its lease stays current until the test moves it
            // (leases are PostgreSQL's clock, which no test clock drives).
            try await pair.database.client.withDatabase { db in
                try await db.raw(
                    """
                    INSERT INTO session_cache_replicas (id, lease_until)
                    VALUES ('r-silent', \(unsafeRaw: ReplicaChannel.databaseNow) + 600000)
                    """
                ).run()
            }
            pair.firstStatements.reset()
            let signOut = Task { try await first.endSession(tokenHash: "t1", reason: .signedOut, cause: .user, at: Date()) }
            // The other replica hears the change and forgets the session; the change then looks again, twice, at which
            // of the replicas it waits on still hold a current lease (every recheck of the wait), and the silent one does.
            #expect(await eventually { pair.second.memory?.lookup("t1") == nil }, "the other replica never heard the change")
            let rechecks = { pair.firstStatements.sent.filter { $0.contains("session_cache_replicas") && $0.contains("id IN (") }.count }
            #expect(await eventually { rechecks() >= 2 }, "the change never looked at the leases again: \(pair.firstStatements.sent)")
            let ended = try await pair.database.client.read("SELECT ended_at FROM sessions WHERE token_hash = 't1'")
            #expect(try ended.first?.decodeNil(column: "ended_at") == true, "the session ended before the silent replica's lease passed")

            // Its lease passes: the change goes on at its next recheck, without another replica's word.
            try await pair.database.client.withDatabase { db in
                try await db.raw(
                    """
                    UPDATE session_cache_replicas SET lease_until = \(unsafeRaw: ReplicaChannel.databaseNow) - 1
                    WHERE id = 'r-silent'
                    """
                ).run()
            }
            #expect(try await signOut.value)
            #expect(try await second.checkSession(tokenHash: "t1")?.session.endReason == .signedOut)
        }
    }

    @Test("a sign-out whose commit returns after the other replica's mark lapsed (a slow standby) is refused there from its answer on")
    func slowCommit() async throws {
        try await Self.withPair { pair in
            let (first, second) = pair.stores
            try await Self.signIn(first, account: "acct_1", tokens: ["t1"])
            #expect(await Self.warm(second, pair.second, "t1"))
            // Every commit that ends a session takes 6 s: a deferred constraint trigger sleeps at COMMIT, as a lagging
            // synchronous standby or a stalled disk would hold it.
            try await pair.database.client.withDatabase { db in
                try await db.raw(
                    """
                    CREATE FUNCTION orchard_test_slow_commit() RETURNS trigger LANGUAGE plpgsql
                    AS $$ BEGIN PERFORM pg_sleep(6); RETURN NULL; END $$
                    """
                ).run()
                try await db.raw(
                    """
                    CREATE CONSTRAINT TRIGGER orchard_test_slow_end AFTER UPDATE ON sessions DEFERRABLE INITIALLY DEFERRED
                    FOR EACH ROW WHEN (NEW.ended_at IS NOT NULL AND OLD.ended_at IS NULL) EXECUTE FUNCTION orchard_test_slow_commit()
                    """
                ).run()
            }
            // The other replica keeps checking, as steady traffic does: once its mark has lapsed, its reads find the
            // session live (the commit has not returned) and may remember it.
            let checking = Task {
                while !Task.isCancelled {
                    _ = try? await second.checkSession(tokenHash: "t1")
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
            defer { checking.cancel() }
            #expect(try await first.endSession(tokenHash: "t1", reason: .signedOut, cause: .user, at: Date()))
            // From the sign-out's answer on, the other replica refuses the session.
            #expect(try await second.checkSession(tokenHash: "t1")?.session.endReason == .signedOut)
            #expect(pair.second.memory?.lookup("t1") == nil, "the other replica still remembers the ended session")
        }
    }

    @Test("a change that ends sessions and does not finish (deaf to its cancellation) is answered unavailable at its limit")
    func changeLimit() async throws {
        let database = try await TestDatabase.make(.postgres)
        try await Migrator(database: database.client, logger: Logger(label: "test")).migrate()
        let backend = try #require(SessionBackend.of(database.client))
        var timings = SessionTimings.replicas
        timings.changeLimit = .seconds(1)
        let keeper = SessionKeeper(database: database.client, backend: backend, answering: false, timings: timings, logger: Logger(label: "test"))
        let held = HeldOperation()
        // Opened after 10 s at the latest, so that a change without its limit fails this test instead of hanging it.
        let opener = Task {
            try? await Task.sleep(for: .seconds(10))
            held.open()
        }
        let started = ContinuousClock.now
        let answer: Result<Int, any Error>
        do {
            answer = .success(
                try await keeper.ending(.sessions(["sess_held"])) { _ in
                    await held.wait()
                    return 1
                }
            )
        } catch {
            answer = .failure(error)
        }
        let took = ContinuousClock.now - started
        held.open()
        opener.cancel()
        let unavailable = if case .failure(let error) = answer { error as? StoreError == .unavailable("") } else { false }
        #expect(unavailable, "the held change was answered \(answer), not unavailable")
        #expect(took >= .seconds(1), "answered \(took) after the call, before its limit")
        #expect(took < .seconds(8), "answered \(took) after the call: the limit is 1 s")
        await database.remove()
    }
}
