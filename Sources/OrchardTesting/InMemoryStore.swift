public import Accounts
public import Foundation
import Synchronization

/// Everything the lifecycle stores, in memory: a ``Lifecycle/Store`` for unit tests of the lifecycle's decisions that
/// need no database. It keeps the SQL store's rules that decisions depend on (a change's condition checked with the
/// change, claims of due rows no lease holds, a deletion that hands over the tokens it removed), and nothing of its
/// concurrency: every call is one step under one lock.
public final class InMemoryStore: Sendable {
    /// The rows, by table.
    public struct Tables: Sendable {
        /// Issued nonces: expiry and consumption.
        public var nonces: [String: (expiresAt: Date, consumedAt: Date?)] = [:]
        /// Accounts by id.
        public var accounts: [String: AccountRecord] = [:]
        /// Validation leases by account id.
        public var validationLeases: [String: Date] = [:]
        /// Sessions by token hash.
        public var sessions: [String: SessionRecord] = [:]
        /// The revocation outbox by id.
        public var revocations: [String: RevocationJob] = [:]
        /// The inbox by `jti`.
        public var inbox: [String: InboxRow] = [:]
        /// The webhook outbox, in the order written.
        public var webhooks: [WebhookDeliveryStatus] = []
        /// Audit records of deletions.
        public var audit: [AuditRecord] = []
        /// Transfer rows by side and account id.
        public var transfers: [TransferSide: [String: TransferRecord]] = [.export: [:], .import: [:]]
        /// Access-token signing keys.
        public var signingKeys: [SigningKeyRecord] = []
        /// Each account's history, in the order written.
        public var events: [HistoryEvent] = []
        /// Web-flow states by their hash.
        public var webFlowStates: [String: WebFlowStateRecord] = [:]

        /// Adds events whose id is not taken, as the SQL store does.
        mutating func add(_ new: [HistoryEvent]) {
            for event in new where !events.contains(where: { $0.id == event.id }) { events.append(event) }
        }

        /// Adds the `signed_out` event of the session with `tokenHash`.
        mutating func signedOut(_ tokenHash: String, cause: SignOutCause, at: Date) {
            guard let session = sessions[tokenHash] else { return }
            let id = HistoryEvent.signedOutID(sessionID: session.id)
            add([HistoryEvent(id: id, accountID: session.accountID, kind: .signedOut, occurredAt: at, sessionID: session.id, reason: cause.rawValue)])
        }
    }

    /// An inbox row and its queue state.
    public struct InboxRow: Sendable {
        /// The entry.
        public var entry: InboxEntry
        /// When it is due.
        public var nextAttemptAt: Date?
        /// Until when its holder owns it.
        public var leaseUntil: Date?
        /// When it was processed, with what outcome.
        public var processed: (at: Date, outcome: InboxOutcome.Kind)?

        /// A row of `entry`, due at `nextAttemptAt`, not held, not processed.
        public init(entry: InboxEntry, nextAttemptAt: Date?) {
            self.entry = entry
            self.nextAttemptAt = nextAttemptAt
        }
    }

    let tables = Mutex(Tables())

    /// An empty store.
    public init() {}

    /// The rows as they are now.
    public var snapshot: Tables { tables.withLock { $0 } }

    /// Runs `body` on the rows under the lock (to set a test up).
    public func edit<T>(_ body: (inout Tables) throws -> T) rethrows -> T {
        try tables.withLock { try body(&$0) }
    }

    /// Whether `account` meets `condition`.
    static func meets(_ account: AccountRecord, _ condition: ChangeCondition?) -> Bool {
        switch condition {
        case nil: true
        case .grantedNoLaterThan(let instant): account.latestGrant <= instant
        case .refreshToken(let sealed): account.sealedRefreshToken == sealed
        }
    }
}

extension InMemoryStore: AccountStore {
    /// Stores an issued nonce.
    public func insertNonce(hash: String, expiresAt: Date) async throws {
        tables.withLock { $0.nonces[hash] = (expiresAt, nil) }
    }

    /// Consumes the first consumable of `hashes`.
    public func consumeNonce(hashes: [String], now: Date) async throws -> NonceConsumption {
        tables.withLock { tables in
            for hash in hashes {
                guard let nonce = tables.nonces[hash], nonce.consumedAt == nil, nonce.expiresAt > now else { continue }
                tables.nonces[hash]?.consumedAt = now
                return .consumed
            }
            return hashes.contains { tables.nonces[$0]?.consumedAt != nil } ? .alreadyConsumed : .unknownOrExpired
        }
    }

    /// The account with one of these subject hashes.
    public func account(subjectHashes: [String]) async throws -> AccountRecord? {
        tables.withLock { tables in tables.accounts.values.first { subjectHashes.contains($0.subjectHash) } }
    }

    /// Every account with one of these subject hashes.
    public func accounts(subjectHashes: [String]) async throws -> [AccountRecord] {
        tables.withLock { tables in tables.accounts.values.filter { subjectHashes.contains($0.subjectHash) } }
    }

    /// A pending import's account by its transfer identifier's hash.
    public func pendingImport(subjectHashes: [String]) async throws -> AccountRecord? {
        tables.withLock { tables in
            tables.accounts.values.first { account in
                let state = tables.transfers[.import]?[account.id]?.state
                return subjectHashes.contains(account.subjectHash) && (state == .imported || state == .failed)
            }
        }
    }

    /// The account with this id.
    public func account(id: String) async throws -> AccountRecord? {
        tables.withLock { $0.accounts[id] }
    }

    /// Accounts by id.
    public func accounts(limit: Int, afterID: String?) async throws -> [AccountRecord] {
        tables.withLock { tables in
            Array(tables.accounts.values.filter { $0.id > (afterID ?? "") }.sorted { $0.id < $1.id }.prefix(limit))
        }
    }

    /// Creates or updates the account and adds the session.
    public func recordSignIn(_ signIn: SignInRecord) async throws -> Bool {
        let (account, session) = (signIn.account, signIn.session)
        return try tables.withLock { tables in
            if signIn.isNew {
                guard !tables.accounts.values.contains(where: { $0.subjectHash == account.subjectHash }) else { throw StoreError.conflict }
            } else if tables.accounts[account.id] == nil {
                if let job = signIn.revocationIfGone { tables.revocations[job.id] = job }
                return false
            }
            tables.accounts[account.id] = account
            tables.sessions[session.tokenHash] = session
            tables.add(signIn.history)
            return true
        }
    }

    /// The session with its account's shown fields (the memory of one process that sees every change at once).
    public func checkSession(tokenHash: String) async throws -> SessionWithAccount? {
        try await session(tokenHash: tokenHash)
    }

    /// The session with its account's shown fields: this store's tables are its memory, and they always answer.
    public func rememberedSession(tokenHash: String) -> SessionWithAccount? {
        tables.withLock { tables in
            tables.sessions[tokenHash].map { SessionWithAccount(session: $0, account: tables.accounts[$0.accountID]?.sealedView) }
        }
    }

    /// The session with its account's shown fields.
    public func session(tokenHash: String) async throws -> SessionWithAccount? {
        rememberedSession(tokenHash: tokenHash)
    }

    /// Ends a live session.
    public func endSession(tokenHash: String, reason: SessionEndReason, cause: SignOutCause, at: Date) async throws -> Bool {
        tables.withLock { tables in
            guard tables.sessions[tokenHash]?.endedAt == nil, tables.sessions[tokenHash] != nil else { return false }
            tables.sessions[tokenHash]?.endedAt = at
            tables.sessions[tokenHash]?.endReason = reason
            tables.signedOut(tokenHash, cause: cause, at: at)
            return true
        }
    }

    /// Records a session check at `minute` unless the session shows it already.
    public func noteSeen(tokenHash: String, at minute: Date) {
        tables.withLock { tables in
            guard let seen = tables.sessions[tokenHash]?.lastSeenAt, seen >= minute else {
                tables.sessions[tokenHash]?.lastSeenAt = minute
                return
            }
        }
    }

    /// The account's live sessions, newest first.
    public func liveSessions(accountID: String, now: Date) async throws -> [SessionRecord] {
        tables.withLock { tables in
            tables.sessions.values.filter { $0.accountID == accountID && $0.endedAt == nil && $0.expiresAt > now }
                .sorted { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }
        }
    }

    /// Ends the account's live session `id`.
    public func endSession(id: String, accountID: String, reason: SessionEndReason, cause: SignOutCause, at: Date) async throws -> Bool {
        let hash = tables.withLock { tables in
            tables.sessions.values.first { $0.id == id && $0.accountID == accountID && $0.endedAt == nil && $0.expiresAt > at }?.tokenHash
        }
        guard let hash else { return false }
        return try await endSession(tokenHash: hash, reason: reason, cause: cause, at: at)
    }

    /// Ends the account's other live sessions.
    public func endOtherSessions(
        accountID: String,
        keepingTokenHash: String?,
        reason: SessionEndReason,
        cause: SignOutCause,
        at: Date
    ) async throws -> Int {
        tables.withLock { tables in
            var ended = 0
            for (hash, session) in tables.sessions
            where session.accountID == accountID && hash != keepingTokenHash && session.endedAt == nil && session.expiresAt > at {
                tables.sessions[hash]?.endedAt = at
                tables.sessions[hash]?.endReason = reason
                tables.signedOut(hash, cause: cause, at: at)
                ended += 1
            }
            return ended
        }
    }

    /// The account's events older than the event `before`, newest first.
    public func history(accountID: String, before: String?, limit: Int) async throws -> [HistoryEvent] {
        tables.withLock { tables in
            var events = tables.events.filter { $0.accountID == accountID }.sorted { ($0.occurredAt, $0.id) > ($1.occurredAt, $1.id) }
            if let before {
                guard let cursor = events.first(where: { $0.id == before }) else { return [] }
                events = events.filter { ($0.occurredAt, $0.id) < (cursor.occurredAt, cursor.id) }
            }
            return Array(events.prefix(limit))
        }
    }

    /// Always reachable.
    public func checkReachable() async throws {}
}
