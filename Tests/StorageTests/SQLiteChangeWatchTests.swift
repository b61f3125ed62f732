import Foundation
import Logging
import OrchardTesting
import SQLKit
import Testing

@testable import Storage

/// How serve's session memory sees another process's commits to the SQLite file: each of the watch's connections
/// compares `data_version` with what it saw itself, so a look on any of them finds a commit it has not seen.
@Suite("SQLite: another process's commits, seen on every connection of the watch", .backendIndependent)
struct SQLiteChangeWatchTests {
    @Test("each connection sees a commit once, whichever looked first, with the session_epoch it committed")
    func eachConnectionSeesEachCommit() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("watch.sqlite")
        let client = try await SQLiteDatabaseClient.open(path: path, logger: Logger(label: "test"))
        try await Migrator(database: client, logger: Logger(label: "test")).migrate()
        // The client's own watch, which serve's session memory looks through (one connection per core, at least two).
        guard case .singleProcess(let watch) = client.sessionBackend else {
            Issue.record("no SQLite watch")
            return
        }
        // Another process: a connection of its own, outside serve's client.
        let other = try await SQLiteDatabaseClient.open(path: path, logger: Logger(label: "other"))
        func moveEpoch() async throws {
            try await other.transaction { db in try await db.raw("UPDATE session_epoch SET value = value + 1 WHERE id = 1").run() }
        }

        let first = try watch.look(connection: 0)
        guard case .committed(let epoch) = first else {
            Issue.record("a first look found nothing: \(first)")
            return
        }
        #expect(try watch.look(connection: 1) == .committed(epoch: epoch))
        #expect(try watch.look(connection: 0) == .unchanged)
        #expect(try watch.look(connection: 1) == .unchanged)

        try await moveEpoch()
        // Connection 1 looks first; connection 0's own comparison must still find the commit.
        #expect(try watch.look(connection: 1) == .committed(epoch: epoch + 1))
        #expect(try watch.look(connection: 1) == .unchanged)
        #expect(try watch.look(connection: 0) == .committed(epoch: epoch + 1))
        #expect(try watch.look(connection: 0) == .unchanged)
        // Any free connection: nothing new.
        #expect(try watch.look() == .unchanged)

        try await moveEpoch()
        #expect(try watch.look() == .committed(epoch: epoch + 2))
        await other.close()
        await client.close()
    }
}
