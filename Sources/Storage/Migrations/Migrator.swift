public import Accounts
import AppleID
import Foundation
public import Logging
import SQLKit

/// Creates or upgrades the schema (`orchard migrate`, and at every start).
public struct Migrator: Sendable {
    private let database: any DatabaseClient
    private let logger: Logger

    /// Creates a migrator for one database. It runs without the database's per-operation deadline: building an index on
    /// a large table, or waiting for another replica's migration, may rightly take longer than any request should.
    public init(database: any DatabaseClient, logger: Logger) {
        self.database = database.withoutDeadline
        self.logger = logger
    }

    /// The newest schema version this build knows.
    public static var latestVersion: Int { Migration.all.map(\.version).max() ?? 0 }

    /// Applies every migration not applied yet, each in its own transaction; returns the versions applied.
    ///
    /// The first migration also writes the installation's salt for the audit hash of deleted subjects.
    /// On PostgreSQL every step first takes a transaction-scoped advisory lock, so replicas starting together migrate one
    /// after the other and each sees what the other applied.
    @discardableResult
    public func migrate(random: any RandomSource = SystemRandomSource()) async throws -> [Int] {
        let lock = lockStatement
        try await database.transaction { db in
            if let lock { try await db.raw(SQLQueryString(lock)).run() }
            try await db.raw(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"
            ).run()
        }
        var applied: [Int] = []
        for migration in Migration.all {
            let salt = random.bytes(32).hexString
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let didApply = try await database.transaction { db -> Bool in
                if let lock { try await db.raw(SQLQueryString(lock)).run() }
                let done = try await db.raw("SELECT version FROM schema_migrations WHERE version = \(bind: migration.version)").all()
                guard done.isEmpty else { return false }
                for statement in migration.statements {
                    try await db.raw(SQLQueryString(statement)).run()
                }
                try await migration.backfill?(db, random)
                if migration.version == 1 {
                    try await db.raw(
                        "INSERT INTO orchard_settings (name, value) VALUES ('audit_salt', \(bind: salt))"
                    ).run()
                }
                try await db.raw(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (\(bind: migration.version), \(bind: now))"
                ).run()
                return true
            }
            if didApply {
                logger.info(
                    "applied migration",
                    metadata: ["migration.version": "\(migration.version)", "migration.summary": "\(migration.summary)"]
                )
                applied.append(migration.version)
            }
        }
        return applied
    }

    /// `SELECT pg_advisory_xact_lock(…)` on PostgreSQL; SQLite's `BEGIN IMMEDIATE` already serializes writers.
    private var lockStatement: String? {
        database.flavor == .postgres ? "SELECT pg_advisory_xact_lock(7262634) AS locked" : nil
    }

    /// The highest applied version, or 0 on an empty database.
    public func currentVersion() async throws -> Int {
        try await database.withDatabase { db in
            try await db.raw(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"
            ).run()
            let row = try await db.raw("SELECT MAX(version) AS version FROM schema_migrations").first()
            return try row?.decodeNil(column: "version") == false ? try row?.decode(column: "version", as: Int.self) ?? 0 : 0
        }
    }
}
