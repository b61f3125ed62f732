import Accounts
import Logging
import OrchardTesting
import Storage

/// A store the lifecycle runs on, for the behaviour every one of them must have: the in-memory store (which the
/// decision tests and the fast tier of route tests run over), SQLite and, when a test cluster is reachable,
/// PostgreSQL. A test that passes over the in-memory store then means what it would mean over a database.
enum StoreUnderTest: Sendable, CustomStringConvertible {
    case memory
    case sql(TestDatabase.Backend)

    /// Every store this pass runs: the in-memory store in the SQLite pass, and the pass's database.
    static let all: [StoreUnderTest] = (TestDatabase.isSQLitePass ? [.memory] : []) + TestDatabase.passBackends.map { .sql($0) }

    var description: String {
        switch self {
        case .memory: "in memory"
        case .sql(let backend): backend.rawValue
        }
    }

    /// Runs `body` over a fresh, empty store of this kind (a migrated database for the SQL ones, removed afterwards).
    func with(_ body: (any Lifecycle.Store) async throws -> Void) async throws {
        switch self {
        case .memory:
            try await body(InMemoryStore())
        case .sql(let backend):
            let database = try await TestDatabase.make(backend)
            do {
                try await Migrator(database: database.client, logger: Logger(label: "test")).migrate()
                try await body(TestDatabase.store(database.client))
            } catch {
                await database.remove()
                throw error
            }
            await database.remove()
        }
    }
}
