import Foundation
import Logging
import OrchardTesting
import SQLKit
import Testing

@testable import Accounts
@testable import Storage

/// How serve's session memory sees another process's commits to the SQLite file: each of the watch's connections
/// compares `data_version` with what it saw itself, so a look on any of them finds a commit it has not seen.
@Suite("SQLite: another process's commits, seen on every connection of the watch", .backendIndependent)
struct SQLiteChangeWatchTests {
    @Test("each connection sees a commit once, whichever looked first, with the session_epoch it committed")
    func eachConnectionSeesEachCommit() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (client, watch, other) = try await Self.migratedFile(in: directory)
        func moveEpoch() async throws {
            try await other.transaction { db in try await db.raw("UPDATE session_epoch SET value = value + 1 WHERE id = 1").run() }
        }

        let first = try watch.look(connection: 0)
        guard case .committed(let epoch) = first else {
            Issue.record("a first look found nothing: \(first)")
            return
        }
        #expect(try watch.look(connection: 1) == .committed(epoch: epoch))
        #expect(try watch.look(connection: 0) == .unchanged)
        #expect(try watch.look(connection: 1) == .unchanged)

        try await moveEpoch()
        // Connection 1 looks first; connection 0's own comparison must still find the commit.
        #expect(try watch.look(connection: 1) == .committed(epoch: epoch + 1))
        #expect(try watch.look(connection: 1) == .unchanged)
        #expect(try watch.look(connection: 0) == .committed(epoch: epoch + 1))
        #expect(try watch.look(connection: 0) == .unchanged)
        // Any free connection: nothing new.
        #expect(try watch.look() == .unchanged)

        try await moveEpoch()
        #expect(try watch.look() == .committed(epoch: epoch + 2))
        await other.close()
        await client.close()
    }

    @Test("a look with nothing committed steps no statement; a commit by another process, or by the client, makes the next one step it")
    func unchangedLooksReadTheHeaderOnly() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (client, watch, other) = try await Self.migratedFile(in: directory)
        guard case .committed(let epoch) = try watch.look(connection: 0) else {
            Issue.record("a first look found nothing")
            return
        }
        // The first look mapped the WAL index; the second reads its header and steps the statement once more; from
        // then on, while nothing is committed, no look steps it.
        #expect(try watch.look(connection: 0) == .unchanged)
        let stepped = watch.statementLooks
        for _ in 0..<50 { #expect(try watch.look(connection: 0) == .unchanged) }
        #expect(watch.statementLooks == stepped, "looks with nothing committed stepped data_version")

        // Another process's commit: the very next look steps the statement and finds it.
        try await other.transaction { db in try await db.raw("UPDATE session_epoch SET value = value + 1 WHERE id = 1").run() }
        #expect(try watch.look(connection: 0) == .committed(epoch: epoch + 1))
        #expect(watch.statementLooks == stepped + 1)
        #expect(try watch.look(connection: 0) == .unchanged)
        #expect(watch.statementLooks == stepped + 1)

        // The client's own commit moves the header too (and data_version, on the watch's connection of its own).
        try await client.transaction { db in try await db.raw("UPDATE session_epoch SET value = value + 1 WHERE id = 1").run() }
        #expect(try watch.look(connection: 0) == .committed(epoch: epoch + 2))
        #expect(watch.statementLooks == stepped + 2)

        // A commit that leaves session_epoch alone is still a commit: the look steps the statement and reads the epoch.
        try await other.transaction { db in try await db.raw("INSERT INTO nonces (hash, expires_at) VALUES ('n', 0)").run() }
        #expect(try watch.look(connection: 0) == .committed(epoch: epoch + 2))
        #expect(watch.statementLooks == stepped + 3)
        await other.close()
        await client.close()
    }

    @Test("a watch opened before the migrations fails its looks until they ran, then sees their commits; closed, it throws")
    func looksBeforeMigrationAndAfterClose() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("watch.sqlite")
        // `serve` opens the database (and so the watch) before it migrates: session_epoch does not exist yet.
        let client = try await SQLiteDatabaseClient.open(path: path, logger: Logger(label: "test"))
        let watch = try Self.watch(of: client)
        #expect(throws: (any Error).self) { try watch.look(connection: 0) }
        try await Migrator(database: client, logger: Logger(label: "test")).migrate()
        // The failed look remembered no data_version: this one finds the migrations' commits and the epoch.
        let look = try watch.look(connection: 0)
        guard case .committed = look else {
            Issue.record("after the migrations a look found nothing: \(look)")
            return
        }
        #expect(try watch.look(connection: 0) == .unchanged)
        await client.close()
        #expect(throws: (any Error).self) { try watch.look(connection: 0) }
    }

    @Test("the memory's answer without waiting: none before a check, the session after one, none once it ended or was changed by another process")
    func rememberedSession() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("remembered.sqlite")
        let client = try await SQLiteDatabaseClient.open(path: path, logger: Logger(label: "test"))
        try await Migrator(database: client, logger: Logger(label: "test")).migrate()
        let store = TestDatabase.store(client, answering: true)
        let now = Date()
        try await Self.signIn(store, tokenHash: "t1", at: now)
        try await Self.signIn(store, tokenHash: "t2", at: now)

        #expect(store.rememberedSession(tokenHash: "t1") == nil)
        let checked = try #require(try await store.checkSession(tokenHash: "t1"))
        #expect(store.rememberedSession(tokenHash: "t1") == checked)
        #expect(store.rememberedSession(tokenHash: "unknown") == nil)
        // A store that does not answer from memory (every process but serve) never does.
        #expect(TestDatabase.store(client).rememberedSession(tokenHash: "t1") == nil)

        #expect(try await store.endSession(tokenHash: "t1", reason: .signedOut, cause: .user, at: now))
        #expect(store.rememberedSession(tokenHash: "t1") == nil)

        // Another process (an operator's command) ends t2 after serve remembered it: the look finds its commit first.
        _ = try await store.checkSession(tokenHash: "t2")
        #expect(store.rememberedSession(tokenHash: "t2") != nil)
        let other = try await SQLiteDatabaseClient.open(path: path, logger: Logger(label: "other"))
        #expect(try await TestDatabase.store(other).endSession(tokenHash: "t2", reason: .signedOut, cause: .operator, at: now))
        #expect(store.rememberedSession(tokenHash: "t2") == nil)
        await other.close()
        await client.close()
    }

    /// A migrated file in `directory`: serve's client, its watch (which serve's session memory looks through, one
    /// connection per core, at least two) and another process's client (a connection of its own, outside serve's).
    static func migratedFile(in directory: TemporaryDirectory) async throws -> (SQLiteDatabaseClient, SQLiteChangeWatch, SQLiteDatabaseClient) {
        let path = directory.file("watch.sqlite")
        let client = try await SQLiteDatabaseClient.open(path: path, logger: Logger(label: "test"))
        try await Migrator(database: client, logger: Logger(label: "test")).migrate()
        return (client, try watch(of: client), try await SQLiteDatabaseClient.open(path: path, logger: Logger(label: "other")))
    }

    /// The watch of `client`, which its session keeper looks through.
    static func watch(of client: SQLiteDatabaseClient) throws -> SQLiteChangeWatch {
        guard case .singleProcess(let watch) = client.sessionBackend else { throw CancellationError() }
        return watch
    }

    /// An account and a live session with `tokenHash`, as a sign-in writes them.
    static func signIn(_ store: SQLAccountStore, tokenHash: String, at now: Date) async throws {
        let id = "acct_\(tokenHash)"
        let account = AccountRecord.fixture(id: id, subjectHash: "s_\(tokenHash)", at: now)
        let session = SessionRecord(
            id: "sess_\(tokenHash)",
            tokenHash: tokenHash,
            accountID: id,
            createdAt: now,
            expiresAt: now.addingTimeInterval(3600)
        )
        #expect(try await store.recordSignIn(SignInRecord(account: account, isNew: true, session: session, history: [])))
    }
}
