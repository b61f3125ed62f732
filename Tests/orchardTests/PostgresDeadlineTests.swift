import Accounts
import Foundation
import Logging
import OrchardTesting
import SQLKit
import Storage
import Testing

@Suite(
    "PostgreSQL that stops answering",
    .enabled(if: TestDatabase.postgresAdminURL != nil && getuid() == 0, "needs a PostgreSQL test cluster and root to run its own")
)
struct PostgresDeadlineTests {
    @Test("a hung server: a running query and a waiting lease both end as storage unavailable at the deadline; then it recovers")
    func hungServer() async throws {
        // The cluster's commands block: they run off the concurrency pool, which the other tests need.
        let cluster = try await offThePool { try DedicatedCluster.start() }
        do {
            try await stopAndResume(cluster)
        } catch {
            try? await offThePool { cluster.signal("CONT") }
            try? await offThePool { cluster.remove() }
            throw error
        }
        try await offThePool { cluster.remove() }
    }

    private func stopAndResume(_ cluster: DedicatedCluster) async throws {
        // One connection, so a second caller waits for the lease the first one holds.
        let database = try PostgresDatabaseClient.open(
            url: cluster.url,
            poolSize: 1,
            caFile: nil,
            deadline: .milliseconds(500),
            logger: Logger(label: "test.deadline")
        )
        let one = try await database.withDatabase { try await $0.raw("SELECT 1 AS one").first()?.decode(column: "one", as: Int.self) }
        #expect(one == 1)

        try await offThePool { cluster.signal("STOP") }
        let started = ContinuousClock.now
        // The first holds the only connection with its query; the second waits for that connection.
        let running = Task { try await database.withDatabase { _ = try await $0.raw("SELECT 2 AS two").first() } }
        let leasing = Task { try await database.withDatabase { _ = try await $0.raw("SELECT 3 AS three").first() } }
        for outcome in [await running.result, await leasing.result] {
            guard case .failure(let error) = outcome else {
                Issue.record("a query against a stopped server succeeded")
                continue
            }
            #expect((error as? StoreError)?.reason == "PostgreSQL did not answer in time", "\(error)")
        }
        // Twice the deadline (1 s) each, not PostgresNIO's own minute-long waits.
        #expect(ContinuousClock.now - started < .seconds(5))

        try await offThePool { cluster.signal("CONT") }
        let recovered = await eventually(timeout: 30) {
            (try? await database.withDatabase { try await $0.raw("SELECT 4 AS four").first() }) != nil
        }
        #expect(recovered)
        await database.close()
    }
}

extension DedicatedCluster {
    /// Sends `SIG<name>` to the cluster's postmaster and every backend it started.
    func signal(_ name: String) {
        guard let text = try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8),
            let pid = text.split(separator: "\n").first.map(String.init)
        else { return }
        shell("kill -\(name) \(pid); pkill -\(name) -P \(pid)")
    }
}
