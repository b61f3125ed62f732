import Accounts
import Foundation
import Logging
import OrchardTesting
import Storage
import Testing

/// The web-flow states on every backend: stored, taken once, expired ones swept.
@Suite struct WebFlowStateStoreTests {
    static let backends = TestDatabase.passBackends

    @Test("a state is taken once (then it is gone), and the retention job removes the expired ones", arguments: Self.backends)
    func takeOnce(_ backend: TestDatabase.Backend) async throws {
        let database = try await TestDatabase.make(backend)
        do {
            try await Migrator(database: database.client, logger: Logger(label: "test")).migrate()
            let store = TestDatabase.store(database.client)
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            let live = WebFlowStateRecord(
                stateHash: "h-live",
                sealedNonce: "v1.k.sealed",
                returnTo: "/account",
                expiresAt: now.addingTimeInterval(600)
            )
            let old = WebFlowStateRecord(stateHash: "h-old", sealedNonce: "v1.k.old", returnTo: "/", expiresAt: now.addingTimeInterval(-1))
            try await store.insertWebFlowState(old, now: now.addingTimeInterval(-700))
            try await store.insertWebFlowState(live, now: now)
            let retention = TestDatabase.store(database.client)
            let cutoffs = Dictionary(uniqueKeysWithValues: RetentionTarget.allCases.map { ($0, RetentionWindows().cutoff($0, at: now)) })
            #expect(try await retention.retentionTargetsDue(cutoffs: cutoffs) == [.webFlowStates])
            #expect(try await retention.purge(.webFlowStates, before: now, limit: 10) == 1)
            #expect(try await retention.retentionTargetsDue(cutoffs: cutoffs).isEmpty)
            #expect(try await store.takeWebFlowState(hash: "h-old") == nil)
            #expect(try await store.takeWebFlowState(hash: "h-live") == live)
            #expect(try await store.takeWebFlowState(hash: "h-live") == nil)
            #expect(try await store.takeWebFlowState(hash: "h-unknown") == nil)

            try await store.insertWebFlowState(live, now: now)
            async let first = store.takeWebFlowState(hash: "h-live")
            async let second = store.takeWebFlowState(hash: "h-live")
            let taken = [try await first, try await second].compactMap { $0 }
            #expect(taken == [live])
        } catch {
            await database.remove()
            throw error
        }
        await database.remove()
    }
}
