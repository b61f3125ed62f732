import AppleID

/// `orchard vault status` and `orchard vault rotate`: which keys seal the stored values, and re-sealing every one of them
/// under the first key of `ORCHARD_VAULT_KEYS` (with the subject lookup hashes recomputed), so that older keys can be
/// retired.
///
/// Rotation is resumable and idempotent: a row already under the first key (and, for an account, with its current
/// lookup hash) is left alone, so a second run after a crash only finishes the rest. Each row is rewritten in its own
/// short transaction, and only if it still holds what was read, so it is safe beside a running `serve`: a row the
/// server changed meanwhile is counted and picked up by the next run.
public struct VaultRotation: Sendable {
    let store: any VaultStore
    let vault: TokenVault
    let pageSize = 200

    /// Creates the rotation over the store and the vault of the configured keys.
    public init(store: any VaultStore, vault: TokenVault) {
        self.store = store
        self.vault = vault
    }

    /// How many stored values each key id seals.
    public struct Status: Sendable {
        /// Values by key id.
        public var valuesByKey: [String: Int] = [:]
        /// The key ids in use that are not configured (their values cannot be opened).
        public var missingKeys: [String] = []
        /// Values under keys other than the first.
        public var notUnderCurrentKey = 0
    }

    /// What a rotation did.
    public struct Outcome: Sendable {
        /// Rows re-sealed.
        public var rotated = 0
        /// Rows already under the first key.
        public var unchanged = 0
        /// Rows with a value under a key that is not configured: left as they are.
        public var missingKey = 0
        /// Rows a running server changed between the read and the write: left for the next run.
        public var changedMeanwhile = 0
    }

    /// Counts the stored values by the key that sealed them.
    public func status() async throws -> Status {
        var status = Status()
        let configured = Set(vault.keyIDs)
        try await forEachRow { _, row in
            for sealed in row.values.values {
                let id = vault.keyID(of: sealed) ?? "?"
                status.valuesByKey[id, default: 0] += 1
                if id != vault.currentKeyID { status.notUnderCurrentKey += 1 }
            }
        }
        status.missingKeys = status.valuesByKey.keys.filter { !configured.contains($0) }.sorted()
        return status
    }

    /// How many rows hold sealed values (for a progress bar's total).
    public func rowCount() async throws -> Int {
        var count = 0
        try await forEachRow { _, _ in count += 1 }
        return count
    }

    /// Re-seals every row not wholly under the first key; `progress` is called after each row with the rows done.
    public func rotate(progress: (Int) -> Void = { _ in }) async throws -> Outcome {
        var outcome = Outcome()
        var done = 0
        try await forEachRow { table, row in
            defer {
                done += 1
                progress(done)
            }
            var opened: [String: String] = [:]
            for (column, sealed) in row.values {
                guard let value = try? vault.open(sealed, context: Self.context(table, row.key, column)) else {
                    outcome.missingKey += 1
                    return
                }
                opened[column] = value.value
            }
            let subjectHash = table == .accounts ? opened["sealed_subject"].map { vault.subjectHash(Redacted($0)) } : nil
            // The email's lookup hash too (an account from before it was kept gets one here).
            let emailHash = table == .accounts ? opened["sealed_email"].map { vault.emailHash($0) } : nil
            let current = row.values.values.allSatisfy { vault.keyID(of: $0) == vault.currentKeyID }
            guard !current || subjectHash != row.subjectHash || emailHash != row.emailHash else {
                outcome.unchanged += 1
                return
            }
            var resealed: [String: String] = [:]
            for (column, value) in opened {
                resealed[column] = try vault.seal(value, context: Self.context(table, row.key, column))
            }
            if try await store.replaceSealed(in: table, row: row, with: resealed, subjectHash: subjectHash, emailHash: emailHash) {
                outcome.rotated += 1
            } else {
                outcome.changedMeanwhile += 1
            }
        }
        return outcome
    }

    /// Every row of every table, page by page.
    private func forEachRow(_ body: (VaultTable, SealedRow) async throws -> Void) async throws {
        for table in VaultTable.allCases {
            var after: String?
            while true {
                let page = try await store.sealedRows(in: table, after: after, limit: pageSize)
                for row in page where !row.values.isEmpty { try await body(table, row) }
                guard page.count == pageSize, let last = page.last else { break }
                after = last.key
            }
        }
    }

    /// The sealing context of a column of a row: the one the lifecycle sealed it with.
    static func context(_ table: VaultTable, _ key: String, _ column: String) -> String {
        switch table {
        case .accounts:
            SealingContext.AccountField(rawValue: String(column.dropFirst("sealed_".count))).map { SealingContext.account(key, $0) }
                ?? "account:\(key):\(column.dropFirst("sealed_".count))"
        case .revocations: SealingContext.revocation(key)
        case .notificationInbox: SealingContext.notification(key)
        case .webFlowStates: SealingContext.webFlowState(key)
        case .transferExports: SealingContext.account(key, .transferSub)
        case .sessions: SealingContext.session(key)
        case .signingKeys: SealingContext.signingKey(key)
        case .accountEvents: SealingContext.historyEvent(key)
        }
    }
}
