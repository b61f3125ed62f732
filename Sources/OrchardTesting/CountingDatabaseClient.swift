import Accounts
public import SQLKit
public import Storage
import Synchronization

/// A database that counts the statements Orchard sends it (a transaction's `BEGIN` and `COMMIT` included), for tests
/// of how many statements an operation costs. Everything passes through to the wrapped database.
public final class CountingDatabaseClient: WrappingDatabaseClient {
    public let base: any DatabaseClient
    private let counted = Mutex(0)
    private let texts = Mutex<[String]>([])

    /// The statements' texts since the last ``reset()`` (reads and transactions' statements).
    public var sent: [String] { texts.withLock { $0 } }

    /// Wraps `base`.
    public init(_ base: any DatabaseClient) {
        self.base = base
    }

    /// The statements sent since the last ``reset()``.
    public var statements: Int { counted.withLock { $0 } }

    /// Starts counting from zero.
    public func reset() {
        counted.withLock { $0 = 0 }
        texts.withLock { $0.removeAll() }
    }

    private func count(_ n: Int = 1) { counted.withLock { $0 += n } }

    private func recording(_ db: any SQLDatabase) -> any SQLDatabase {
        RecordingSQLDatabase(base: db) { sql in
            self.count()
            self.texts.withLock { $0.append(sql) }
        }
    }

    /// Counts each statement `body` runs.
    public func withDatabase<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await base.withDatabase { try await body(self.recording($0)) }
    }

    /// Counts one.
    public func read(_ query: SQLQueryString) async throws -> [any SQLRow] {
        count()
        let sql = try await base.withDatabase { $0.serialize(query).sql }
        texts.withLock { $0.append(sql) }
        return try await base.read(query)
    }

    /// Counts `BEGIN`, `COMMIT` and each statement `body` runs.
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        count(2)
        return try await base.transaction { try await body(self.recording($0)) }
    }

}
