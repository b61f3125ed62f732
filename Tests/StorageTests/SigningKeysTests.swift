import AppleID
import Foundation
import Logging
import OrchardTesting
import SQLKit
import Storage
import Synchronization
import Testing

@testable import Accounts

/// The access-token signing keys over each backend: replicas that start together, and a rotation cut off mid-way.
@Suite struct SigningKeysTests {
    static let backends = TestDatabase.passBackends

    /// One replica's keys over `database`, with its own memory.
    static func replica(_ database: any DatabaseClient, vault: TokenVault, clock: TestWallClock) -> SigningKeys {
        SigningKeys(
            store: TestDatabase.store(database),
            vault: vault,
            clock: clock,
            random: SystemRandomSource(),
            configuration: AccessTokenConfiguration(issuer: "https://auth.example.com")
        )
    }

    static func vault() -> TokenVault {
        TokenVault(keys: [try! VaultKey(id: "k1", keyBytes: Data((0..<32).map { _ in UInt8.random(in: 0...255) }))])
    }

    @Test("eight replicas starting together on an empty database make one key, and all publish and sign with it", arguments: Self.backends)
    func replicasMakeOneKey(_ backend: TestDatabase.Backend) async throws {
        let database = try await TestDatabase.make(backend)
        defer { Task { await database.remove() } }
        try await Migrator(database: database.client, logger: Logger(label: "test")).migrate()
        let vault = Self.vault()
        let clock = TestWallClock(Date())
        let replicas = (0..<8).map { _ in Self.replica(database.client, vault: vault, clock: clock) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for replica in replicas { group.addTask { try await replica.prepare() } }
            try await group.waitForAll()
        }
        let keys = try await TestDatabase.store(database.client).signingKeys()
        #expect(keys.count == 1)
        for replica in replicas {
            let published = try JSONSerialization.jsonObject(with: try await replica.keySet()) as? [String: Any]
            #expect((published?["keys"] as? [[String: Any]])?.compactMap { $0["kid"] as? String } == keys.map(\.id))
        }
        // The next key, due for all of them at once, is made once too.
        clock.advance(by: 30 * 86_400 - 600 + 1)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for replica in replicas { group.addTask { _ = try await replica.keySet() } }
            try await group.waitForAll()
        }
        #expect(try await TestDatabase.store(database.client).signingKeys().count == 2)
    }

    /// A database whose transactions run and then fail to commit: a process that died before its commit.
    final class DyingBeforeCommit: WrappingDatabaseClient {
        let base: any DatabaseClient
        let dying = Mutex(false)
        init(_ base: any DatabaseClient) { self.base = base }
        func withDatabase<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
            try await base.withDatabase(body)
        }
        func read(_ query: SQLQueryString) async throws -> [any SQLRow] { try await base.read(query) }
        func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
            let dies = dying.withLock { $0 }
            return try await base.transaction { db in
                let result = try await body(db)
                if dies { throw StoreError.unavailable("the process died before its commit") }
                return result
            }
        }
    }

    @Test("a rotation cut off before its commit leaves the keys as they were, and the next rotation completes", arguments: Self.backends)
    func rotationCutOff(_ backend: TestDatabase.Backend) async throws {
        let database = try await TestDatabase.make(backend)
        defer { Task { await database.remove() } }
        try await Migrator(database: database.client, logger: Logger(label: "test")).migrate()
        let dying = DyingBeforeCommit(database.client)
        let vault = Self.vault()
        let clock = TestWallClock(Date())
        let keys = Self.replica(dying, vault: vault, clock: clock)
        try await keys.prepare()
        let before = try await keys.list()
        #expect(before.map(\.state) == [.current])

        dying.dying.withLock { $0 = true }
        await #expect(throws: AccountsError.self) { try await keys.rotate(revokeCurrent: true) }
        dying.dying.withLock { $0 = false }
        #expect(try await keys.list() == before, "nothing of the rotation was kept: no new key, the old one not withdrawn")
        // A replica that starts now still signs with the old key.
        let other = Self.replica(database.client, vault: vault, clock: clock)
        let published = try JSONSerialization.jsonObject(with: try await other.keySet()) as? [String: Any]
        #expect((published?["keys"] as? [[String: Any]])?.compactMap { $0["kid"] as? String } == before.map(\.id))

        let rotation = try await keys.rotate(revokeCurrent: true)
        let after = try await keys.list()
        #expect(Set(after.map(\.id)) == Set(before.map(\.id) + [rotation.newKeyID]))
        #expect(after.first { $0.id == rotation.newKeyID }?.state == .current)
        #expect(after.first { $0.id == before.first?.id }?.state == .withdrawn)
        let sealed = try await database.client.read("SELECT sealed_private_key FROM signing_keys WHERE withdrawn_at IS NOT NULL")
        #expect(sealed.count == 1)
        #expect(try sealed.first?.decodeNil(column: "sealed_private_key") == true, "a withdrawn key's private half is erased")
    }
}
