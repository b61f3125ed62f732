import Accounts
import Foundation
import Logging
import OrchardTesting
import Storage
import Testing

@Suite struct SQLAccountStoreTests {
    func withStore(_ body: (SQLAccountStore, SQLiteDatabaseClient) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try await SQLiteDatabaseClient.open(path: directory.file("orchard.sqlite"), logger: Logger(label: "test"))
        try await Migrator(database: database, logger: Logger(label: "test")).migrate()
        do {
            try await body(SQLAccountStore(database: database), database)
        } catch {
            await database.close()
            throw error
        }
        await database.close()
    }

    func account(id: String, subjectHash: String, at now: Date) -> AccountRecord {
        AccountRecord(
            id: id,
            subjectHash: subjectHash,
            sealedSubject: "v1.k.s",
            sealedEmail: nil,
            isPrivateEmail: true,
            emailForwarding: .enabled,
            sealedName: nil,
            clientID: "com.example.app",
            sealedRefreshToken: "v1.k.r",
            sealedAccessToken: nil,
            sealedIdentityToken: nil,
            appleCredential: .valid,
            lastValidatedAt: now,
            nextValidationAt: now.addingTimeInterval(86_400),
            createdAt: now,
            updatedAt: now
        )
    }

    @Test("migrations run once and report the schema version")
    func migrationsIdempotent() async throws {
        try await withStore { _, database in
            let migrator = Migrator(database: database, logger: Logger(label: "test"))
            let applied = try await migrator.migrate()
            let version = try await migrator.currentVersion()
            #expect(applied.isEmpty)
            #expect(version == Migrator.latestVersion)
        }
    }

    @Test("a nonce is consumed once, then reported reused; unknown and expired ones are told apart from reuse")
    func nonces() async throws {
        try await withStore { store, _ in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            try await store.insertNonce(hash: "h1", expiresAt: now.addingTimeInterval(600))
            try await store.insertNonce(hash: "h2", expiresAt: now.addingTimeInterval(600))
            #expect(try await store.consumeNonce(hashes: ["h1"], now: now) == .consumed)
            #expect(try await store.consumeNonce(hashes: ["h1"], now: now) == .alreadyConsumed)
            #expect(try await store.consumeNonce(hashes: ["never"], now: now) == .unknownOrExpired)
            #expect(try await store.consumeNonce(hashes: ["h2"], now: now.addingTimeInterval(601)) == .unknownOrExpired)
        }
    }

    @Test("a new account with a subject hash that already exists is a conflict, and nothing of it is stored")
    func conflict() async throws {
        try await withStore { store, _ in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            let first = account(id: "acct_1", subjectHash: "same", at: now)
            try await store.recordSignIn(
                account: first,
                isNew: true,
                session: SessionRecord(tokenHash: "t1", accountID: "acct_1", createdAt: now, expiresAt: now.addingTimeInterval(60))
            )
            let second = account(id: "acct_2", subjectHash: "same", at: now)
            await #expect(throws: StoreError.conflict) {
                try await store.recordSignIn(
                    account: second,
                    isNew: true,
                    session: SessionRecord(tokenHash: "t2", accountID: "acct_2", createdAt: now, expiresAt: now.addingTimeInterval(60))
                )
            }
            #expect(try await store.session(tokenHash: "t2") == nil)
            #expect(try await store.account(id: "acct_2") == nil)
            #expect(try await store.account(subjectHashes: ["other", "same"])?.id == "acct_1")
            #expect(try await store.accounts(limit: 10, afterID: nil).map(\.id) == ["acct_1"])
        }
    }

    @Test("a session ends once, with its reason")
    func sessions() async throws {
        try await withStore { store, _ in
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            try await store.recordSignIn(
                account: account(id: "acct_1", subjectHash: "s", at: now),
                isNew: true,
                session: SessionRecord(tokenHash: "t1", accountID: "acct_1", createdAt: now, expiresAt: now.addingTimeInterval(60))
            )
            #expect(try await store.endSession(tokenHash: "t1", reason: .signedOut, at: now))
            #expect(try await store.endSession(tokenHash: "t1", reason: .accountDeleted, at: now) == false)
            let session = try #require(try await store.session(tokenHash: "t1"))
            #expect(session.endReason == .signedOut)
            #expect(session.expiresAt == now.addingTimeInterval(60))
            #expect(await store.isReachable())
        }
    }
}
