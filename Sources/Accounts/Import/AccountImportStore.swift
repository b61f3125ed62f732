/// An account an import creates: its record, sealed, and its `imported` history event.
public struct ImportedAccount: Sendable {
    /// The account.
    public var record: AccountRecord
    /// Its `imported` event.
    public var event: HistoryEvent
    /// The salted digest of its subject that a deletion leaves in the audit log: an account deleted here is never
    /// brought back by an import.
    public var subjectDigest: String
}

/// Where an import writes; implemented by the Storage module over SQL.
public protocol AccountImportStore: Sendable {
    /// Of these account ids and subject hashes, the ones some account already has; of these subject digests, the ones
    /// of accounts deleted here.
    func takenAccountKeys(
        ids: [String],
        subjectHashes: [String],
        subjectDigests: [String]
    ) async throws -> (ids: Set<String>, subjectHashes: Set<String>, deletedDigests: Set<String>)
    /// Creates each account with its event, in one transaction, except those whose id or subject hash some account
    /// already has, and those of a subject deleted here (its digest in the audit log); returns the ids it created. A
    /// crash leaves the batch either whole or absent.
    func insertImported(_ accounts: [ImportedAccount]) async throws -> Set<String>
}

/// Which records of one import came first with their account id and subject: a later record with either is a
/// duplicate. Kept outside the process's memory (a file of hashes), so that an import's memory does not grow with its
/// file.
public protocol ImportLedger: Sendable {
    /// For each record's keys, whether none of them was seen before; the keys of a first sighting are kept.
    func firstSightings(_ records: [[String]]) throws -> [Bool]
}
