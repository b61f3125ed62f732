import AppleID

/// Accounts from before the email's lookup hash was kept, as ``EmailHashBackfill`` finds and fills them.
public protocol EmailHashBackfillStore: Sendable {
    /// Whether every account has been given its email hash (recorded once done).
    func emailHashesFilled() async throws -> Bool
    /// Up to `limit` accounts after `afterID` (by id) that hold an email and no email hash: id and sealed email.
    func accountsWithoutEmailHash(afterID: String?, limit: Int) async throws -> [(id: String, sealedEmail: String)]
    /// Sets one account's email hash, if it still holds that sealed email.
    func setEmailHash(accountID: String, sealedEmail: String, hash: String) async throws
    /// Records that every account has its email hash.
    func markEmailHashesFilled() async throws
}

/// Gives the accounts created before Orchard kept the email's lookup hash theirs, so that operators find them by email:
/// run once at `serve`'s start, in the background; idempotent, so replicas doing it side by side are harmless.
public struct EmailHashBackfill: Sendable {
    let store: any EmailHashBackfillStore
    let vault: TokenVault

    /// Creates the backfill over its store and the vault.
    public init(store: any EmailHashBackfillStore, vault: TokenVault) {
        self.store = store
        self.vault = vault
    }

    /// Fills every missing hash, 500 accounts at a time; returns how many were filled.
    public func run() async throws -> Int {
        guard try await !store.emailHashesFilled() else { return 0 }
        var filled = 0
        var after: String?
        while true {
            try Task.checkCancellation()
            let page = try await store.accountsWithoutEmailHash(afterID: after, limit: 500)
            for account in page {
                // An email sealed under a key no longer configured cannot be hashed: `vault rotate` reports it.
                guard let email = try? vault.open(account.sealedEmail, context: SealingContext.account(account.id, .email)) else { continue }
                try await store.setEmailHash(accountID: account.id, sealedEmail: account.sealedEmail, hash: vault.emailHash(email.value))
                filled += 1
            }
            guard page.count == 500, let last = page.last else { break }
            after = last.id
        }
        try await store.markEmailHashesFilled()
        return filled
    }
}
