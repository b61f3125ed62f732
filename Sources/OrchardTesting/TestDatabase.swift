public import Foundation
public import Logging
import SQLKit
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
    private let postgresName: String?

    private init(backend: Backend, client: any DatabaseClient, url: DatabaseURL, directory: TemporaryDirectory, postgresName: String?) {
        self.backend = backend
        self.client = client
        self.url = url
        self.directory = directory
        self.postgresName = postgresName
    }

    /// The backend this test run uses (`ORCHARD_TEST_DATABASE`, SQLite by default).
    public static var selectedBackend: Backend {
        ProcessInfo.processInfo.environment["ORCHARD_TEST_DATABASE"] == "postgres" ? .postgres : .sqlite
    }

    /// The admin URL of the test cluster, if one was started (`scripts/start-test-postgres`).
    public static var postgresAdminURL: String? {
        ProcessInfo.processInfo.environment["ORCHARD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The backends the conformance suite can reach here. Without a cluster, PostgreSQL is skipped with a loud message,
    /// except under `CI=true`, where its absence is a failure the suite reports.
    public static var availableBackends: [Backend] {
        if postgresAdminURL != nil { return [.sqlite, .postgres] }
        if ProcessInfo.processInfo.environment["CI"] != "true" {
            print("WARNING: ORCHARD_TEST_POSTGRES_URL is not set: the PostgreSQL tests are SKIPPED (see README: scripts/start-test-postgres)")
        }
        return [.sqlite]
    }

    /// Makes a fresh, migrated database on `backend`; its driver logs through `logger` (the harness passes Orchard's,
    /// so that the log check sees what the driver would log).
    public static func make(_ backend: Backend = selectedBackend, logger: Logger = Logger(label: "test.database")) async throws -> TestDatabase {
        let directory = try TemporaryDirectory()
        switch backend {
        case .sqlite:
            let path = directory.file("orchard.sqlite")
            let client = try await SQLiteDatabaseClient.open(path: path, logger: logger)
            return TestDatabase(backend: .sqlite, client: client, url: .sqlite(path: path), directory: directory, postgresName: nil)
        case .postgres:
            guard let admin = postgresAdminURL else {
                throw HarnessError("ORCHARD_TEST_DATABASE=postgres needs ORCHARD_TEST_POSTGRES_URL (scripts/start-test-postgres)")
            }
            let name = "orchard_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let adminClient = try PostgresDatabaseClient.open(url: admin, poolSize: 1, caFile: nil, sessionCache: .none, logger: logger)
            try await adminClient.withDatabase { db in try await db.raw("CREATE DATABASE \(unsafeRaw: name)").run() }
            await adminClient.close()
            let url = Self.replacingDatabase(in: admin, with: name)
            // Tests are not about PostgreSQL's deadline (DatabaseOutageTests stops a cluster for that): on a loaded
            // machine (8 tests at once beside a release build) a query can wait past the 5 s default and fail a sign-in.
            let client = try PostgresDatabaseClient.open(
                url: url,
                poolSize: 10,
                caFile: nil,
                operationDeadline: .seconds(60),
                sessionCache: .answering,
                logger: logger
            )
            return TestDatabase(backend: .postgres, client: client, url: .postgres(url: url), directory: directory, postgresName: name)
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
        if let postgresName, let admin = Self.postgresAdminURL,
            let adminClient = try? PostgresDatabaseClient.open(
                url: admin,
                poolSize: 1,
                caFile: nil,
                sessionCache: .none,
                logger: Logger(label: "test.database")
            )
        {
            try? await adminClient.withDatabase { db in
                try await db.raw("DROP DATABASE IF EXISTS \(unsafeRaw: postgresName) WITH (FORCE)").run()
            }
            await adminClient.close()
        }
        directory.remove()
    }

    static func replacingDatabase(in url: String, with name: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.path = "/" + name
        return components.string ?? url
    }
}
