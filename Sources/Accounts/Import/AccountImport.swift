public import AppleID
import Crypto
import Foundation

/// Brings an app's existing users into Orchard from another system (`orchard accounts import`): each record of the
/// file becomes an account with the source's user id, its email and name sealed as at sign-in, no session, the
/// credential `unknown`, and an `imported` history event, so that the user's next identity token (Apple's `sub` is the
/// same for every app of one team) signs into it. See docs/importing.md.
///
/// Records come in batches; each batch is one transaction, so a crash leaves every account of a batch there or none,
/// and running the import again skips what is there. A record whose account id or subject an earlier record of the same
/// file had is a duplicate (``ImportLedger``). Nothing of a record's content reaches the report: only its position and
/// the rule it broke.
public struct AccountImport: Sendable {
    /// What became of one record.
    public enum Verdict: String, Sendable, CaseIterable {
        /// Created (with `--dry-run`: would be).
        case imported
        /// An account with its id or subject was already here.
        case skipped
        /// An earlier record of the file had its id or subject.
        case duplicate
        /// The source holds no Apple identity for the user.
        case noAppleIdentity = "no_apple_identity"
        /// The record breaks a rule.
        case invalid
    }

    /// One record as read from the file: a user, or what was wrong with it.
    public enum Input: Sendable {
        /// A user at `position`.
        case user(position: Int, ImportedUser)
        /// A record at `position` that could not be read.
        case unreadable(position: Int, reason: String)
    }

    /// The counts, and the first hundred invalid records.
    public struct Outcome: Sendable, Equatable {
        /// How many records had each result.
        public var counts: [Verdict: Int] = [:]
        /// The first hundred invalid records: their position and the rule they broke.
        public var invalidLines: [(line: Int, reason: String)] = []

        /// No record yet.
        public init() {}

        /// The count of `result`.
        public subscript(result: Verdict) -> Int { counts[result] ?? 0 }

        /// Adds `result` for the record at `position`.
        mutating func add(_ result: Verdict, position: Int, reason: String? = nil) {
            counts[result, default: 0] += 1
            if result == .invalid, invalidLines.count < 100 { invalidLines.append((position, reason ?? "invalid")) }
        }

        public static func == (lhs: Outcome, rhs: Outcome) -> Bool {
            lhs.counts == rhs.counts && lhs.invalidLines.map(\.line) == rhs.invalidLines.map(\.line)
                && lhs.invalidLines.map(\.reason) == rhs.invalidLines.map(\.reason)
        }
    }

    let store: any AccountImportStore
    let vault: TokenVault
    let clock: any WallClock
    let random: any RandomSource
    let timing: ValidationTiming
    /// The digests a deletion leaves, to know a subject deleted here.
    let audit: AuditDigests

    /// Creates the import over its store.
    public init(
        store: any AccountImportStore,
        vault: TokenVault,
        clock: any WallClock,
        random: any RandomSource,
        timing: ValidationTiming,
        audit: AuditDigests
    ) {
        self.audit = audit
        self.store = store
        self.vault = vault
        self.clock = clock
        self.random = random
        self.timing = timing
    }

    /// How many records a batch holds: one transaction each.
    public static let batchSize = 500

    /// Imports one batch of records into `outcome`.
    ///
    /// - Parameters:
    ///   - source: The file's source (the `imported` event's reason).
    ///   - clientIDs: The configured client ids; a record's own must be one of them.
    ///   - defaultClientID: The client id of a record that names none (`--client-id`, else the first configured).
    ///   - dryRun: Reads and checks, writes nothing.
    ///   - ledger: The duplicates' record for this import.
    /// - Throws: What the store throws (the batch is then not written).
    public func importBatch(
        _ batch: [Input],
        source: ImportSource,
        clientIDs: Set<String>,
        defaultClientID: String,
        dryRun: Bool,
        ledger: any ImportLedger,
        into outcome: inout Outcome
    ) async throws {
        let now = clock.now()
        var candidates: [(position: Int, account: ImportedAccount, keys: [String])] = []
        for input in batch {
            switch input {
            case .unreadable(let position, let reason):
                outcome.add(.invalid, position: position, reason: reason)
            case .user(let position, let user):
                guard let subject = user.subject else {
                    outcome.add(.noAppleIdentity, position: position)
                    continue
                }
                do {
                    let account = try self.account(
                        user,
                        subject: subject,
                        digest: try await audit.digest(Redacted(subject)),
                        source: source,
                        clientIDs: clientIDs,
                        defaultClientID: defaultClientID,
                        at: now
                    )
                    let keys = [account.record.subjectHash, "id:" + SHA256.hash(utf8: account.record.id).hexString]
                    candidates.append((position, account, keys))
                } catch let problem as ImportRecordProblem {
                    outcome.add(.invalid, position: position, reason: problem.reason)
                }
            }
        }
        guard !candidates.isEmpty else { return }
        let first = try ledger.firstSightings(candidates.map(\.keys))
        var fresh: [(position: Int, account: ImportedAccount)] = []
        for (candidate, isFirst) in zip(candidates, first) {
            if isFirst { fresh.append((candidate.position, candidate.account)) } else { outcome.add(.duplicate, position: candidate.position) }
        }
        guard !fresh.isEmpty else { return }
        if dryRun {
            let taken = try await store.takenAccountKeys(
                ids: fresh.map(\.account.record.id),
                subjectHashes: fresh.map(\.account.record.subjectHash),
                subjectDigests: fresh.map(\.account.subjectDigest)
            )
            for (position, account) in fresh {
                let isTaken =
                    taken.ids.contains(account.record.id) || taken.subjectHashes.contains(account.record.subjectHash)
                    || taken.deletedDigests.contains(account.subjectDigest)
                outcome.add(isTaken ? .skipped : .imported, position: position)
            }
            return
        }
        let created = try await store.insertImported(fresh.map(\.account))
        for (position, account) in fresh { outcome.add(created.contains(account.record.id) ? .imported : .skipped, position: position) }
    }

    /// The account a user becomes, sealed, or the rule the user breaks.
    private func account(
        _ user: ImportedUser,
        subject: String,
        digest: String,
        source: ImportSource,
        clientIDs: Set<String>,
        defaultClientID: String,
        at now: Date
    ) throws -> ImportedAccount {
        if let id = user.accountID, !ImportedUser.isAccountID(id) {
            throw ImportRecordProblem(reason: "the account id must be 1 to 128 characters of A-Z a-z 0-9 . _ - | : @")
        }
        guard Self.isToken(subject, longest: 255) else { throw ImportRecordProblem(reason: "Apple's sub is not a subject") }
        let clientID = user.clientID ?? defaultClientID
        guard clientIDs.contains(clientID) else { throw ImportRecordProblem(reason: "client_id is not a configured client id") }
        let email = user.email.flatMap { $0.isEmpty ? nil : $0 }
        if let email, !(email.utf8.count <= 320 && email.contains("@") && Self.isText(email)) {
            throw ImportRecordProblem(reason: "the email is not an email address")
        }
        for part in [user.firstName, user.lastName] {
            if let part, !(part.count <= 200 && Self.isText(part)) {
                throw ImportRecordProblem(reason: "a name is longer than 200 characters or holds a control character")
            }
        }
        if let refresh = user.refreshToken, !Self.isToken(refresh, longest: 4096) {
            throw ImportRecordProblem(reason: "refresh_token is not a token")
        }
        let id = user.accountID ?? random.id("acct_")
        let sealing = AccountSealing(vault: vault)
        var record = try sealing.newAccount(id: id, subject: Redacted(subject), clientID: clientID, at: now)
        if let createdAt = user.createdAt {
            // A date from the future would make Apple's notifications about the account look older than it (and be
            // ignored); one that is not a number would not fit the database.
            guard createdAt.timeIntervalSince1970.isFinite, (0...now.timeIntervalSince1970 + 300).contains(createdAt.timeIntervalSince1970) else {
                throw ImportRecordProblem(reason: "created_at is in the future or not a time since 1970")
            }
        }
        record.createdAt = user.createdAt ?? now
        if let email {
            try record.setEmail(email, vault: vault)
            record.isPrivateEmail = user.isPrivateEmail ?? false
            record.emailVerified = user.emailVerified ?? true
        }
        if user.firstName != nil || user.lastName != nil {
            record.sealedName = try sealing.sealName(AccountView.Name(firstName: user.firstName, lastName: user.lastName), accountID: id)
        }
        if let refresh = user.refreshToken {
            // Sealed like any other, and validated within its first interval, which sets `valid` or `revoked`.
            record.sealedRefreshToken = try vault.seal(refresh, context: SealingContext.account(id, .refreshToken))
            record.nextValidationAt = timing.next(after: now)
        }
        return ImportedAccount(
            record: record,
            event: HistoryEvent(id: random.id("evt_", at: now), accountID: id, kind: .imported, occurredAt: now, reason: source.rawValue),
            subjectDigest: digest
        )
    }

    /// 1 to `longest` printable ASCII characters, no space.
    private static func isToken(_ text: String, longest: Int) -> Bool {
        (1...longest).contains(text.utf8.count) && text.utf8.allSatisfy { (0x21...0x7e).contains($0) }
    }

    /// Text without control characters.
    private static func isText(_ text: String) -> Bool {
        !text.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }
    }

    /// The file does not hold what its source writes (Firebase's file has no `users` array).
    public struct FileProblem: Error, Sendable {
        /// What is wrong, without the file's content.
        public let reason: String
    }

    /// Imports a whole file read a piece at a time by `nextChunk` (empty or `nil` at its end): each record decoded as
    /// the source writes it, a batch of ``batchSize`` at a time. `progress` is told how many bytes were read.
    ///
    /// - Throws: ``FileProblem`` when the file does not hold what its source writes; what `nextChunk` or the store
    ///   throws.
    public func run(
        source: ImportSource,
        clientIDs: Set<String>,
        defaultClientID: String,
        dryRun: Bool,
        ledger: any ImportLedger,
        nextChunk: () throws -> [UInt8]?,
        progress: (Int) -> Void = { _ in }
    ) async throws -> Outcome {
        let decoder = ImportDecoder()
        var reader: JSONRecordReader?
        var outcome = Outcome()
        var pending: [Input] = []
        var read = 0
        func take(_ record: JSONRecordReader.Record) {
            guard let bytes = record.bytes else {
                pending.append(.unreadable(position: record.position, reason: "longer than 1 MiB"))
                return
            }
            do throws(ImportRecordProblem) {
                pending.append(.user(position: record.position, try decoder.user(bytes, source: source)))
            } catch {
                pending.append(.unreadable(position: record.position, reason: error.reason))
            }
        }
        func flush(all: Bool) async throws {
            while pending.count >= Self.batchSize || (all && !pending.isEmpty) {
                let batch = Array(pending.prefix(Self.batchSize))
                pending.removeFirst(batch.count)
                try await importBatch(
                    batch,
                    source: source,
                    clientIDs: clientIDs,
                    defaultClientID: defaultClientID,
                    dryRun: dryRun,
                    ledger: ledger,
                    into: &outcome
                )
            }
        }
        while let chunk = try nextChunk(), !chunk.isEmpty {
            read += chunk.count
            // The layout is known at the file's first character that is not white space (Supabase's `[`).
            if reader == nil, let first = chunk.first(where: { ![0x20, 0x09, 0x0a, 0x0d].contains($0) }) {
                reader = JSONRecordReader(layout: source.layout(firstCharacter: first))
            }
            reader?.feed(chunk, take)
            try await flush(all: false)
            progress(read)
        }
        reader?.finish(take)
        try await flush(all: true)
        if let reader, case .array(let key?) = reader.layout, !reader.foundArray {
            throw FileProblem(reason: "holds no \"\(key)\" array: not a \(source.rawValue) export")
        }
        return outcome
    }
}
