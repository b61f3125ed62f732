import Accounts
import Foundation
import Logging
import OrchardTesting
import SQLKit
import Storage
import Synchronization
import Testing

/// PostgreSQL's conflicts between transactions: the one it aborts is run again.
@Suite struct TransactionConflictTests {
    @Test(
        "two transactions that lock the same rows in opposite orders both complete: PostgreSQL's deadlock victim runs again",
        .enabled(if: TestDatabase.selectedBackend == .postgres, "needs the PostgreSQL pass")
    )
    func deadlockVictimRunsAgain() async throws {
        let database = try await TestDatabase.make(.postgres)
        defer { Task { await database.remove() } }
        try await database.client.withDatabase { db in
            try await db.raw("CREATE TABLE counters (id INTEGER PRIMARY KEY, value INTEGER NOT NULL)").run()
            try await db.raw("INSERT INTO counters (id, value) VALUES (1, 0), (2, 0)").run()
        }
        let state = State()
        let client = database.client
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await Self.crossing(client, state, 1, 2) }
            group.addTask { try await Self.crossing(client, state, 2, 1) }
            try await group.waitForAll()
        }
        let values = try await database.client.read("SELECT value FROM counters ORDER BY id").map { try $0.decode(column: "value", as: Int.self) }
        #expect(values == [2, 2], "each transaction's two increments, once")
        #expect(state.attempts.withLock { $0 } == 3, "one of the two ran again")
    }

    /// The transactions' attempts, and how many first attempts hold their first row.
    final class State: Sendable {
        let attempts = Mutex(0)
        let arrived = Mutex(0)
    }

    /// Locks row `first`, waits (on the first two attempts) until the other transaction holds its first row too, then
    /// locks `second`.
    static func crossing(_ client: any DatabaseClient, _ state: State, _ first: Int, _ second: Int) async throws {
        try await client.transaction { db in
            let attempt = state.attempts.withLock {
                $0 += 1
                return $0
            }
            try await db.raw("UPDATE counters SET value = value + 1 WHERE id = \(bind: first)").run()
            if attempt <= 2 {
                state.arrived.withLock { $0 += 1 }
                let deadline = ContinuousClock.now + .seconds(10)
                while state.arrived.withLock({ $0 }) < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            }
            try await db.raw("UPDATE counters SET value = value + 1 WHERE id = \(bind: second)").run()
        }
    }
}
