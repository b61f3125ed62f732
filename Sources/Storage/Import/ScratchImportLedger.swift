public import Accounts
import Foundation
import GRDB

/// An import's record of the keys (subject hashes, hashed account ids) it has seen, in a SQLite file of its own in the
/// system's temporary folder, removed when the import ends: the import's memory does not grow with its file.
public final class ScratchImportLedger: ImportLedger {
    private let queue: DatabaseQueue
    private let directory: URL

    /// A new, empty ledger.
    /// - Throws: when the temporary file cannot be made.
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("orchard-import-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = OFF")
            try db.execute(sql: "PRAGMA synchronous = OFF")
        }
        queue = try DatabaseQueue(path: directory.appendingPathComponent("seen.sqlite").path, configuration: configuration)
        try queue.write { try $0.execute(sql: "CREATE TABLE seen (key TEXT PRIMARY KEY) WITHOUT ROWID") }
    }

    /// For each record's keys, whether none was seen before; a first sighting's keys are kept.
    public func firstSightings(_ records: [[String]]) throws -> [Bool] {
        try queue.write { db in
            let lookup = try db.cachedStatement(sql: "SELECT 1 FROM seen WHERE key = ?")
            let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO seen (key) VALUES (?)")
            return try records.map { keys in
                for key in keys where try Int.fetchOne(lookup, arguments: [key]) != nil { return false }
                for key in keys { try insert.execute(arguments: [key]) }
                return true
            }
        }
    }

    /// Removes the file.
    public func remove() {
        try? queue.close()
        try? FileManager.default.removeItem(at: directory)
    }
}
