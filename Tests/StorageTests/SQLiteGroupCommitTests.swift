import Foundation
import Logging
import OrchardTesting
import SQLKit
import Storage
import Testing

/// The SQLite client's concurrency: readers beside the one writer, and group commit.
@Suite("SQLite: readers on their own connections, writers sharing commits", .backendIndependent)
struct SQLiteGroupCommitTests {
    /// A database with one table, and a transaction that holds the writer until the test lets it go.
    struct Fixture {
        let directory: TemporaryDirectory
        let client: SQLiteDatabaseClient

        static func make() async throws -> Fixture {
            let directory = try TemporaryDirectory()
            let client = try await SQLiteDatabaseClient.open(path: directory.file("group.sqlite"), logger: Logger(label: "test"))
            try await client.withDatabase { db in
                try await db.raw("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)").run()
            }
            return Fixture(directory: directory, client: client)
        }

        func ids() async throws -> [Int] {
            try await client.withDatabase { db in
                try await db.raw("SELECT id FROM items ORDER BY id").all().map { try $0.decode(column: "id", as: Int.self) }
            }
        }

        func insert(_ id: Int) async throws {
            try await client.transaction { db in
                try await db.raw("INSERT INTO items (id, name) VALUES (\(bind: id), 'item')").run()
            }
        }

        func remove() async {
            await client.close()
            directory.remove()
        }
    }

    @Test("the writer commits with synchronous=FULL, in WAL mode")
    func durableSettings() async throws {
        let fixture = try await Fixture.make()
        let settings = try await fixture.client.withDatabase { db in
            (
                try await db.raw("PRAGMA synchronous").first()?.decode(column: "synchronous", as: Int.self),
                try await db.raw("PRAGMA journal_mode").first()?.decode(column: "journal_mode", as: String.self),
                try await db.raw("PRAGMA secure_delete").first()?.decode(column: "secure_delete", as: Int.self)
            )
        }
        #expect(settings.0 == 2, "synchronous must be FULL (2)")
        #expect(settings.1 == "wal")
        #expect(settings.2 == 1)
        await fixture.remove()
    }

    @Test("transactions queued behind a commit in flight are committed as one group; a failing one is rolled back alone")
    func groupCommit() async throws {
        let fixture = try await Fixture.make()
        let client = fixture.client
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let (holding, holds) = AsyncStream.makeStream(of: Void.self)
        let before = client.commitStatistics

        async let held: Void = client.transaction { db in
            try await db.raw("INSERT INTO items (id, name) VALUES (0, 'held')").run()
            holds.yield()
            for await _ in gate { break }
        }
        for await _ in holding { break }

        // While the writer is held, a read answers at once and sees only committed rows.
        #expect(try await fixture.ids() == [])

        let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            for id in [1, 2, 3, 4, 5, 0, 6, 7, 8, 9] {
                group.addTask {
                    do {
                        try await fixture.insert(id)
                        return (id, true)
                    } catch {
                        return (id, false)
                    }
                }
            }
            let queued = await eventually { client.commitStatistics.queued == 10 }
            #expect(queued, "the ten transactions must wait for the writer")
            open.yield()
            return try await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
        }
        try await held

        #expect(outcomes[0] == false, "a duplicate key fails its own transaction")
        #expect(outcomes.filter { $0.key != 0 }.values.allSatisfy { $0 })
        #expect(try await fixture.ids() == Array(0...9))
        let after = client.commitStatistics
        #expect(after.groups - before.groups == 2, "the held transaction, then one group of the ten")
        #expect(after.transactions - before.transactions == 11)
        await fixture.remove()
    }

    @Test("once a commit leaves 1,000 pages in the WAL, a checkpoint of its own copies them into the database file")
    func checkpointsPastThreshold() async throws {
        let fixture = try await Fixture.make()
        let path = fixture.directory.file("group.sqlite")
        try await fixture.client.withDatabase { db in
            try await db.raw("CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL)").run()
        }
        // Four commits of 400 rows of 4,000 bytes (a page each): the WAL passes 1,000 pages on the third. In WAL mode
        // the database file grows only when a checkpoint copies pages into it, and nothing here asks for one.
        for round in 0..<4 {
            try await fixture.client.transaction { db in
                for row in 0..<400 {
                    try await db.raw("INSERT INTO blobs (id, data) VALUES (\(bind: round * 400 + row), zeroblob(4000))").run()
                }
            }
        }
        let size = { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }
        let checkpointed = await eventually { size() >= 1_000 * 4_000 }
        #expect(checkpointed, "the database file holds \(size()) bytes: the WAL's first 1,000 pages were never checkpointed")
        await fixture.remove()
    }

    @Test("a committed group survives closing and reopening the file")
    func reopened() async throws {
        let fixture = try await Fixture.make()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for id in 1...50 { group.addTask { try await fixture.insert(id) } }
            try await group.waitForAll()
        }
        await fixture.client.close()
        let reopened = try await SQLiteDatabaseClient.open(path: fixture.directory.file("group.sqlite"), logger: Logger(label: "test"))
        let ids = try await reopened.withDatabase { db in
            try await db.raw("SELECT id FROM items ORDER BY id").all().map { try $0.decode(column: "id", as: Int.self) }
        }
        #expect(ids == Array(1...50))
        await reopened.close()
        fixture.directory.remove()
    }
}
