import Accounts
public import Logging
public import ServiceLifecycle

/// A database opened from `ORCHARD_DATABASE_URL`: its client, what it brings to the session memory, and the services the
/// process runs while it uses it.
public struct OpenedDatabase: Sendable {
    /// The client the stores use.
    public let client: any DatabaseClient
    /// What the backend brings to the session memory's coherence (``SessionKeeper``).
    public let sessionBackend: SessionBackend
    /// What runs while the database is used: PostgreSQL's pool; nothing for SQLite.
    public let services: [any Service]

    /// Runs `body` with the database while its services run (in child tasks of the caller's), then stops them and
    /// closes it: for a command, which has no service group of its own.
    public func whileRunning<T>(_ body: () async throws -> T) async throws -> T {
        let result: Result<T, any Error> = await withThrowingTaskGroup(of: Void.self) { group in
            for service in services {
                group.addTask { try await service.run() }
            }
            defer { group.cancelAll() }
            do {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        }
        await client.close()
        return try result.get()
    }

    /// A store over the database for a process that checks no sessions (a command): its changes that end sessions are
    /// announced to the replicas that remember them, and its own process remembers nothing.
    public func store(logger: Logger) -> SQLAccountStore {
        SQLAccountStore(keeper: SessionKeeper(database: client, backend: sessionBackend, answering: false, logger: logger))
    }
}

extension DatabaseURL {
    /// Opens the database this URL names.
    ///
    /// - Parameters:
    ///   - listenURL: PostgreSQL: where the replicas' listener connects (`ORCHARD_DATABASE_LISTEN_URL`).
    ///   - pooler: PostgreSQL: whether the URL goes through a transaction-pooling proxy (`ORCHARD_DATABASE_POOLER`).
    /// - Throws: ``Accounts/StoreError`` when it cannot be reached or is not supported by this build.
    public func open(
        poolSize: Int = 10,
        caFile: String? = nil,
        listenURL: String? = nil,
        pooler: DatabasePooler = .none,
        logger: Logger
    ) async throws -> OpenedDatabase {
        switch self {
        case .sqlite(let path):
            let client = try await SQLiteDatabaseClient.open(path: path, logger: logger)
            return OpenedDatabase(client: client, sessionBackend: client.sessionBackend, services: [])
        case .postgres(let url):
            let client = try PostgresDatabaseClient.open(
                url: url,
                listenURL: listenURL,
                poolSize: poolSize,
                caFile: caFile,
                pooler: pooler,
                logger: logger
            )
            return OpenedDatabase(client: client, sessionBackend: client.sessionBackend, services: [client.service])
        }
    }
}
