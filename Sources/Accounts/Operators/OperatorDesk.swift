import AppleID

/// What operators look at and finish: finding an account by its id, email or Apple `sub`; its sessions, history and
/// transfer state; the deletions whose revocation at Apple is not done; failed webhooks and their redrive; the
/// notifications Apple sent and whether they arrive. Ending sessions and deleting go through ``AccountDesk``, as the
/// user's own routes do.
public struct OperatorDesk: Sendable {
    /// Accounts a search answers, at most.
    public static let searchLimit = 20
    /// Events an account's page shows.
    public static let accountEvents = 50
    /// Rows of a queue shown, at most.
    public static let queueLimit = 200
    /// Notifications per page, at most.
    public static let pageLimit = 1...100

    /// An account as an operator sees it.
    public struct AccountDetail: Sendable {
        /// The account, opened.
        public var account: AccountView
        /// Its live sessions, newest first.
        public var sessions: [DeviceSession]
        /// Its last events, newest first.
        public var events: [HistoryEntry]
        /// Its app-transfer state, on whichever side it has one.
        public var transfer: TransferRecord?
        /// The transfer's side.
        public var transferSide: TransferSide?
    }

    let accounts: AccountDesk
    let store: any OperatorDeskStore
    let transfers: any TransferStore
    let wakeups: JobWakeups

    /// Creates the desk over the lifecycle's parts and the store's operator queries.
    public init(lifecycle: Lifecycle, store: any OperatorDeskStore & TransferStore) {
        self.accounts = lifecycle.accounts
        self.store = store
        self.transfers = store
        self.wakeups = lifecycle.wakeups
    }

    /// Accounts whose id is `query`, or whose Apple `sub` or email (letter case ignored) is: found through the keyed
    /// hashes under every configured vault key, never by opening rows.
    ///
    /// - Throws: `invalid_request` for an empty query, one over 320 bytes, or one with a control character.
    public func search(_ query: String) async throws(AccountsError) -> [AccountView] {
        guard (1...320).contains(query.utf8.count), !query.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw AccountsError(.invalidRequest, "q must be an account id, an email or an Apple sub of 1 to 320 characters") }
        let vault = accounts.vault
        let hashes = vault.subjectHashCandidates(Redacted(query)) + vault.emailHashCandidates(query)
        let found = try await storing { try await store.accounts(id: query, hashes: hashes, limit: Self.searchLimit) }
        var views: [AccountView] = []
        for record in found { views.append(try accounts.sealing.view(of: record.sealedView)) }
        return views
    }

    /// An account with its sessions, last events and transfer state.
    ///
    /// - Throws: `not_found` when there is no account with that id.
    public func account(id: String) async throws(AccountsError) -> AccountDetail {
        guard ImportedUser.isAccountID(id) else { throw AccountsError(.notFound, "no account with that id") }
        let view = try await accounts.account(id: id)
        var detail = AccountDetail(
            account: view,
            sessions: try await accounts.sessions(accountID: id),
            events: try await accounts.history(accountID: id, before: nil, limit: Self.accountEvents).events
        )
        for side in TransferSide.allCases {
            if let record = try await storing({ try await transfers.transfer(side: side, accountID: id) }) {
                detail.transfer = record
                detail.transferSide = side
                break
            }
        }
        return detail
    }

    /// Deletions whose revocation at Apple is not done, in `state`, newest first.
    public func revocations(_ state: RevocationQueueState) async throws(AccountsError) -> [QueuedRevocation] {
        try await storing { try await store.queuedRevocations(state, limit: Self.queueLimit) }
    }

    /// Tries a revocation that waits on an operator (`failed`: Apple refused Orchard's key, or a vault key was missing)
    /// again now, once the cause is mended, rather than when its lease runs out.
    ///
    /// - Throws: `not_found` when no failed revocation has that id.
    public func retryRevocation(id: String) async throws(AccountsError) {
        guard OpaqueID.isID(id, prefix: "rev_"), try await storing({ try await store.retryRevocation(id: id, at: accounts.clock.now()) }) else {
            throw AccountsError(.notFound, "no failed revocation with that id")
        }
        wakeups.notify(.revocations)
    }

    /// Webhook deliveries given up, newest first.
    public func failedWebhooks() async throws(AccountsError) -> [FailedWebhook] {
        try await storing { try await store.failedWebhooks(limit: Self.queueLimit) }
    }

    /// Tries a failed delivery again from now with a fresh schedule; the receiver sees the same `webhook-id`.
    ///
    /// - Throws: `not_found` when no failed delivery has that id.
    public func retryWebhook(id: String) async throws(AccountsError) {
        guard OpaqueID.isID(id, prefix: "whd_"), try await storing({ try await store.retryWebhook(id: id, at: accounts.clock.now()) }) else {
            throw AccountsError(.notFound, "no failed delivery with that id")
        }
        wakeups.notify(.webhooks)
    }

    /// A page of the notifications Apple sent, newest first.
    ///
    /// - Throws: `invalid_request` for a limit out of range or a cursor this server did not give.
    public func notifications(before: String?, limit: Int) async throws(AccountsError) -> OperatorPage<ReceivedNotification> {
        guard Self.pageLimit.contains(limit) else { throw AccountsError(.invalidRequest, "limit must be 1 to 100") }
        if let before, !(1...256).contains(before.utf8.count) { throw AccountsError(.invalidRequest, "before must be the next cursor of a page") }
        guard let rows = try await storing({ try await store.notifications(before: before, limit: limit + 1) }) else {
            throw AccountsError(.invalidRequest, "before must be the next cursor of a page")
        }
        let page = Array(rows.prefix(limit))
        return OperatorPage(items: page, next: rows.count > limit ? page.last?.id : nil)
    }

    /// Whether Apple's notifications arrive, per client id: every configured one, and any other that received some.
    public func delivery(clientIDs: [String]) async throws(AccountsError) -> [DeliveryCounts] {
        let counted = try await storing { try await store.delivery(now: accounts.clock.now()) }
        let byClient = Dictionary(counted.map { ($0.clientID, $0) }, uniquingKeysWith: { first, _ in first })
        let others = counted.map(\.clientID).filter { !clientIDs.contains($0) }.sorted()
        return (clientIDs + others).map { byClient[$0] ?? DeliveryCounts(clientID: $0) }
    }
}
