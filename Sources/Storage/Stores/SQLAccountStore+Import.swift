public import Accounts
import Foundation
import SQLKit

extension SQLAccountStore: AccountImportStore {
    /// Of these ids and subject hashes, the ones some account has, and of these digests the ones of deleted accounts.
    public func takenAccountKeys(
        ids: [String],
        subjectHashes: [String],
        subjectDigests: [String]
    ) async throws -> (ids: Set<String>, subjectHashes: Set<String>, deletedDigests: Set<String>) {
        guard !ids.isEmpty || !subjectHashes.isEmpty else { return ([], [], []) }
        let rows = try await database.read(
            """
            SELECT id, subject_hash FROM accounts
            WHERE id IN (\(binds: ids.isEmpty ? [""] : ids)) OR subject_hash IN (\(binds: subjectHashes.isEmpty ? [""] : subjectHashes))
            """
        )
        var taken: (ids: Set<String>, subjectHashes: Set<String>, deletedDigests: Set<String>) = ([], [], [])
        for row in rows {
            taken.ids.insert(try row.string("id"))
            taken.subjectHashes.insert(try row.string("subject_hash"))
        }
        taken.deletedDigests = try await database.transaction { db in try await Self.deletedDigests(subjectDigests, on: db) }
        return taken
    }

    /// Of these subject digests, the ones an account deletion left in the audit log.
    static func deletedDigests(_ digests: [String], on db: any SQLDatabase) async throws -> Set<String> {
        guard !digests.isEmpty else { return [] }
        return Set(
            try await db.raw(
                "SELECT subject_digest FROM audit_events WHERE event = 'account.deleted' AND subject_digest IN (\(binds: digests))"
            ).all().map { try $0.string("subject_digest") }
        )
    }

    /// Creates the accounts whose id and subject hash are free, and their events, in one transaction: one statement
    /// for the accounts (`ON CONFLICT DO NOTHING`, which covers both), one for the events of those it created.
    public func insertImported(_ accounts: [ImportedAccount]) async throws -> Set<String> {
        guard !accounts.isEmpty else { return [] }
        return try await database.transaction { db in
            // A user deleted here since the export was made stays deleted, however often the file is imported.
            let deleted = try await Self.deletedDigests(accounts.map(\.subjectDigest), on: db)
            let accounts = accounts.filter { !deleted.contains($0.subjectDigest) }
            guard !accounts.isEmpty else { return [] }
            let values = accounts.map(\.record).map { account -> SQLQueryString in
                """
                (\(bind: account.id), \(bind: account.subjectHash), \(bind: account.sealedSubject), \(bind: account.sealedEmail),
                    \(bind: account.isPrivateEmail ? 1 : 0), \(bind: account.emailForwarding.rawValue), \(bind: account.sealedName),
                    \(bind: account.clientID), \(bind: account.sealedRefreshToken), NULL, NULL, \(bind: account.appleCredential.rawValue),
                    NULL, \(bind: account.nextValidationAt?.milliseconds), \(bind: account.createdAt.milliseconds),
                    \(bind: account.updatedAt.milliseconds), NULL, NULL, \(bind: account.emailVerified ? 1 : 0),
                    \(bind: account.emailHash))
                """
            }.joined(separator: ", ")
            let created = Set(
                try await db.raw(
                    """
                    INSERT INTO accounts (\(unsafeRaw: Self.accountColumns)) VALUES \(values)
                    ON CONFLICT DO NOTHING
                    RETURNING id
                    """
                ).all().map { try $0.string("id") }
            )
            try await Self.insertEvents(accounts.filter { created.contains($0.record.id) }.map(\.event), on: db)
            return created
        }
    }
}
