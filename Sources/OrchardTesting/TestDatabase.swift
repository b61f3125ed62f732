public import Foundation
public import Logging
import SQLKit
import ServiceLifecycle
public import Storage

/// A database for one test: a SQLite file in a temporary folder, or (with `ORCHARD_TEST_DATABASE=postgres`) a fresh
/// database in the cluster `ORCHARD_TEST_POSTGRES_URL` names, dropped afterwards.
public final class TestDatabase: Sendable {
    /// Which backend a test run uses.
    public enum Backend: String, Sendable, CaseIterable {
        /// The embedded default.
        case sqlite
        /// The cluster of `ORCHARD_TEST_POSTGRES_URL`.
        case postgres
    }

    /// The backend.
    public let backend: Backend
    /// The client over it.
    public let client: any DatabaseClient
    /// The URL Orchard is configured with.
    public let url: DatabaseURL
    /// The SQLite file's folder (SQLite only).
    public let directory: TemporaryDirectory
    /// What the database brings to the session memory.
    public let sessionBackend: SessionBackend
    private let postgresName: String?
    /// PostgreSQL's pool service, run for the test's length (test support; `serve` runs it in its service group).
    private let pool: Task<Void, any Error>?

    private init(
        backend: Backend,
        client: any DatabaseClient,
        url: DatabaseURL,
        directory: TemporaryDirectory,
        sessionBackend: SessionBackend,
        postgresName: String?,
        pool: Task<Void, any Error>?
    ) {
        self.backend = backend
        self.client = client
        self.url = url
        self.directory = directory
        self.sessionBackend = sessionBackend
        self.postgresName = postgresName
        self.pool = pool
    }

    /// A PostgreSQL client whose pool runs until the returned task is cancelled: what tests use where `serve` would run
    /// the pool's service in its service group. Returns once the task has entered the pool's run loop, so that the
    /// caller's first query does not find the pool not yet running (PostgresNIO warns of each such lease).
    public static func runningPostgres(
        url: String,
        poolSize: Int = 10,
        operationDeadline: Duration = .seconds(10),
        logger: Logger
    ) async throws -> (PostgresDatabaseClient, Task<Void, any Error>) {
        let client = try PostgresDatabaseClient.open(url: url, poolSize: poolSize, caFile: nil, operationDeadline: operationDeadline, logger: logger)
        let service = client.service
        let (entering, entered) = AsyncStream.makeStream(of: Never.self)
        let pool = Task {
            entered.finish()
            try await service.run()
        }
        for await _ in entering {}
        return (client, pool)
    }

    /// A store over `client` (Orchard's own SQLite or PostgreSQL client, or a test's wrapper of one), answering checks
    /// from memory or not.
    public static func store(_ client: any DatabaseClient, answering: Bool = false) -> SQLAccountStore {
        var base = client
        while let wrapper = base as? any WrappingDatabaseClient { base = wrapper.base }
        guard let backend = SessionBackend.of(base) else { preconditionFailure("not Orchard's own database client: \(type(of: base))") }
        return SQLAccountStore(keeper: SessionKeeper(database: client, backend: backend, answering: answering, logger: Logger(label: "test")))
    }

    /// The backend this test run uses (`ORCHARD_TEST_DATABASE`, SQLite by default).
    public static var selectedBackend: Backend {
        ProcessInfo.processInfo.environment["ORCHARD_TEST_DATABASE"] == "postgres" ? .postgres : .sqlite
    }

    /// The admin URL of the test cluster, if one was started (`scripts/start-test-postgres`).
    public static var postgresAdminURL: String? {
        ProcessInfo.processInfo.environment["ORCHARD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The backends the storage conformance suites run on in this pass: the pass's own (``selectedBackend``), so that
    /// `scripts/test`'s SQLite pass runs them on SQLite and its PostgreSQL pass on PostgreSQL, each once. Run with
    /// `ORCHARD_TEST_DATABASE=postgres` and a cluster (`scripts/start-test-postgres`) for PostgreSQL's.
    public static var passBackends: [Backend] { [selectedBackend] }

    /// Whether this is the SQLite pass, which runs what touches no database of the pass's backend (the in-memory store's
    /// conformance, suites marked backend-independent); the PostgreSQL pass skips them rather than run them twice.
    public static var isSQLitePass: Bool { selectedBackend == .sqlite }

    /// Makes a fresh, migrated database on `backend`; its driver logs through `logger` (the harness passes Orchard's,
    /// so that the log check sees what the driver would log).
    public static func make(_ backend: Backend = selectedBackend, logger: Logger = Logger(label: "test.database")) async throws -> TestDatabase {
        StallWatch.start()
        let directory = try TemporaryDirectory()
        switch backend {
        case .sqlite:
            let path = directory.file("orchard.sqlite")
            let client = try await SQLiteDatabaseClient.open(path: path, logger: logger)
            return TestDatabase(
                backend: .sqlite,
                client: client,
                url: .sqlite(path: path),
                directory: directory,
                sessionBackend: client.sessionBackend,
                postgresName: nil,
                pool: nil
            )
        case .postgres:
            guard let admin = postgresAdminURL else {
                throw HarnessError("ORCHARD_TEST_DATABASE=postgres needs ORCHARD_TEST_POSTGRES_URL (scripts/start-test-postgres)")
            }
            let name = "orchard_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let (adminClient, adminPool) = try await runningPostgres(url: admin, poolSize: 1, logger: logger)
            defer { adminPool.cancel() }
            try await adminClient.withDatabase { db in try await db.raw("CREATE DATABASE \(unsafeRaw: name)").run() }
            let url = Self.replacingDatabase(in: admin, with: name)
            // Tests are not about PostgreSQL's deadline (DatabaseOutageTests stops a cluster for that): on a loaded
            // machine (8 tests at once beside a release build) a query can wait past the 5 s default and fail a sign-in.
            let (client, pool) = try await runningPostgres(url: url, poolSize: 10, operationDeadline: .seconds(60), logger: logger)
            return TestDatabase(
                backend: .postgres,
                client: client,
                url: .postgres(url: url),
                directory: directory,
                sessionBackend: client.sessionBackend,
                postgresName: name,
                pool: pool
            )
        }
    }

    /// Flushes what the database holds to its files (SQLite: checkpoint; PostgreSQL: `CHECKPOINT`), then returns
    /// every file's bytes: the SQLite file and its WAL, or the whole cluster's data directory.
    public func files() async throws -> [(name: String, bytes: Data)] {
        switch backend {
        case .sqlite:
            try await (client as? SQLiteDatabaseClient)?.checkpoint()
            return try directory.allFileContents()
        case .postgres:
            try await client.withDatabase { db in try await db.raw("CHECKPOINT").run() }
            guard let data = ProcessInfo.processInfo.environment["ORCHARD_TEST_POSTGRES_DATA"] else { return [] }
            var files: [(String, Data)] = []
            let enumerator = FileManager.default.enumerator(atPath: data)
            while let relative = enumerator?.nextObject() as? String {
                let path = (data as NSString).appendingPathComponent(relative)
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                    let bytes = FileManager.default.contents(atPath: path)
                else { continue }
                files.append((relative, bytes))
            }
            return files
        }
    }

    /// Closes the client and removes the database.
    public func remove() async {
        await client.close()
        if let pool {
            pool.cancel()
            _ = await pool.result
        }
        if let postgresName, let admin = Self.postgresAdminURL,
            let (adminClient, adminPool) = try? await Self.runningPostgres(url: admin, poolSize: 1, logger: Logger(label: "test.database"))
        {
            try? await adminClient.withDatabase { db in
                try await db.raw("DROP DATABASE IF EXISTS \(unsafeRaw: postgresName) WITH (FORCE)").run()
            }
            adminPool.cancel()
            _ = await adminPool.result
        }
        directory.remove()
    }

    static func replacingDatabase(in url: String, with name: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.path = "/" + name
        return components.string ?? url
    }
}
