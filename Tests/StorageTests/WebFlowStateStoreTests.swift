import Accounts
import Foundation
import Logging
import OrchardTesting
import Storage
import Testing

/// The web-flow states on every store: stored, taken once, expired ones swept (by the SQL stores' retention job).
@Suite struct WebFlowStateStoreTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    static let live = WebFlowStateRecord(
        stateHash: "h-live",
        sealedNonce: "v1.k.sealed",
        returnTo: "/account",
        expiresAt: now.addingTimeInterval(600)
    )
    static let old = WebFlowStateRecord(stateHash: "h-old", sealedNonce: "v1.k.old", returnTo: "/", expiresAt: now.addingTimeInterval(-1))

    @Test("a state is taken once, then it is gone, also when two take it at once", arguments: StoreUnderTest.all)
    func takeOnce(_ kind: StoreUnderTest) async throws {
        try await kind.with { store in
            try await store.insertWebFlowState(Self.live, now: Self.now)
            #expect(try await store.takeWebFlowState(hash: "h-live") == Self.live)
            #expect(try await store.takeWebFlowState(hash: "h-live") == nil)
            #expect(try await store.takeWebFlowState(hash: "h-unknown") == nil)

            try await store.insertWebFlowState(Self.live, now: Self.now)
            async let first = store.takeWebFlowState(hash: "h-live")
            async let second = store.takeWebFlowState(hash: "h-live")
            let taken = [try await first, try await second].compactMap { $0 }
            #expect(taken == [Self.live])
        }
    }

    @Test("the retention job removes the expired states and leaves the live one", arguments: TestDatabase.passBackends)
    func expiredSwept(_ backend: TestDatabase.Backend) async throws {
        let database = try await TestDatabase.make(backend)
        do {
            try await Migrator(database: database.client, logger: Logger(label: "test")).migrate()
            let store = TestDatabase.store(database.client)
            try await store.insertWebFlowState(Self.old, now: Self.now.addingTimeInterval(-700))
            try await store.insertWebFlowState(Self.live, now: Self.now)
            let cutoffs = Dictionary(uniqueKeysWithValues: RetentionTarget.allCases.map { ($0, RetentionWindows().cutoff($0, at: Self.now)) })
            #expect(try await store.retentionTargetsDue(cutoffs: cutoffs) == [.webFlowStates])
            #expect(try await store.purge(.webFlowStates, before: Self.now, limit: 10) == 1)
            #expect(try await store.retentionTargetsDue(cutoffs: cutoffs).isEmpty)
            #expect(try await store.takeWebFlowState(hash: "h-old") == nil)
            #expect(try await store.takeWebFlowState(hash: "h-live") == Self.live)
        } catch {
            await database.remove()
            throw error
        }
        await database.remove()
    }
}
