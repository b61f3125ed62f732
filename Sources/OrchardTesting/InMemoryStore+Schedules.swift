public import Accounts
public import Foundation
import Synchronization

extension InMemoryStore: ValidationSchedule {
    /// Leases due accounts with a valid credential and a refresh token, oldest due first.
    public func claimDueValidations(now: Date, leaseUntil: Date, limit: Int) async throws -> [AccountRecord] {
        tables.withLock { tables in
            let due = tables.accounts.values
                .filter { account in
                    guard let next = account.nextValidationAt, next <= now else { return false }
                    return account.appleCredential != .revoked && account.sealedRefreshToken != nil
                        && (tables.validationLeases[account.id].map { $0 <= now } ?? true)
                }
                .sorted { ($0.nextValidationAt!, $0.id) < ($1.nextValidationAt!, $1.id) }
                .prefix(limit)
            for account in due { tables.validationLeases[account.id] = leaseUntil }
            return Array(due)
        }
    }

    /// Records validations, each only while the account holds the token validated, and ends their leases.
    public func completeValidations(_ results: [JobResult<AccountRecord, ValidationResult>], at now: Date) async throws {
        tables.withLock { tables in
            for result in results {
                let id = result.job.id
                tables.validationLeases[id] = nil
                guard let account = tables.accounts[id] else { continue }
                let sameToken = account.sealedRefreshToken == result.job.sealedRefreshToken
                switch result.outcome {
                case .done(.validated(let at, let sealedAccessToken, let next)) where sameToken:
                    tables.accounts[id]?.lastValidatedAt = at
                    tables.accounts[id]?.appleCredential = .valid
                    tables.accounts[id]?.sealedAccessToken = sealedAccessToken ?? account.sealedAccessToken
                    tables.accounts[id]?.nextValidationAt = next
                case .done(.unscheduled) where sameToken, .failed where sameToken:
                    tables.accounts[id]?.nextValidationAt = nil
                case .retry(let next, _):
                    tables.accounts[id]?.nextValidationAt = next
                case .done, .failed:
                    break
                }
            }
        }
    }

    /// Whether the account has a live session at `now`.
    public func hasLiveSession(accountID: String, now: Date) async throws -> Bool {
        tables.withLock { tables in
            tables.sessions.values.contains { $0.accountID == accountID && $0.endedAt == nil && $0.expiresAt > now }
        }
    }

    /// Due accounts no lease holds, and the oldest due time.
    public func validationBacklog(now: Date) async throws -> (count: Int, oldestDue: Date?) {
        tables.withLock { tables in
            let due = tables.accounts.values.compactMap { account -> Date? in
                guard let next = account.nextValidationAt, next <= now else { return nil }
                return (tables.validationLeases[account.id].map { $0 <= now } ?? true) ? next : nil
            }
            return (due.count, due.min())
        }
    }
}

extension InMemoryStore: TransferStore {
    /// The account's transfer row on `side`.
    public func transfer(side: TransferSide, accountID: String) async throws -> TransferRecord? {
        tables.withLock { $0.transfers[side]?[accountID] }
    }

    /// Rows of `side` after `afterID`.
    public func transfers(side: TransferSide, afterID: String?, limit: Int) async throws -> [TransferRecord] {
        tables.withLock { tables in
            Array(
                (tables.transfers[side] ?? [:]).values.filter { $0.accountID > (afterID ?? "") }.sorted { $0.accountID < $1.accountID }.prefix(limit)
            )
        }
    }

    /// Inserts or replaces the sending side's row.
    public func recordExport(_ record: TransferRecord) async throws {
        tables.withLock { $0.transfers[.export, default: [:]][record.accountID] = record }
    }

    /// Creates an imported account and its row, unless its id or subject exists.
    public func insertImport(account: AccountRecord, record: TransferRecord) async throws -> Bool {
        tables.withLock { tables in
            guard tables.accounts[account.id] == nil, !tables.accounts.values.contains(where: { $0.subjectHash == account.subjectHash }) else {
                return false
            }
            tables.accounts[account.id] = account
            tables.transfers[.import, default: [:]][record.accountID] = record
            return true
        }
    }

    /// Sets a receiving-side row's state.
    public func markImport(accountID: String, state: TransferState, lastError: String?, at: Date) async throws {
        tables.withLock { tables in
            tables.transfers[.import]?[accountID]?.state = state
            tables.transfers[.import]?[accountID]?.lastError = lastError
            tables.transfers[.import]?[accountID]?.updatedAt = at
        }
    }

    /// Completes a pending import.
    public func completeImport(account: AccountRecord, completion: TransferCompletion) async throws -> Bool {
        tables.withLock { tables in
            let state = tables.transfers[.import]?[account.id]?.state
            guard state == .imported || state == .failed else { return false }
            tables.accounts[account.id] = account
            tables.transfers[.import]?[account.id]?.state = .exchanged
            for delivery in completion.webhooks {
                tables.webhooks.append(
                    WebhookDeliveryStatus(delivery: delivery, status: "pending", lastError: nil, nextAttemptAt: delivery.createdAt)
                )
            }
            return true
        }
    }

    /// Rows of `side` by state.
    public func transferCounts(side: TransferSide) async throws -> [TransferState: Int] {
        tables.withLock { tables in
            (tables.transfers[side] ?? [:]).values.reduce(into: [:]) { $0[$1.state, default: 0] += 1 }
        }
    }

    /// The accounts of `clientIDs`, by id.
    public func accounts(clientIDs: Set<String>, afterID: String?, limit: Int) async throws -> [AccountRecord] {
        tables.withLock { tables in
            Array(
                tables.accounts.values.filter { clientIDs.contains($0.clientID) && $0.id > (afterID ?? "") }.sorted { $0.id < $1.id }
                    .prefix(limit)
            )
        }
    }

    /// How many accounts `clientIDs` have.
    public func accountCount(clientIDs: Set<String>) async throws -> Int {
        tables.withLock { tables in tables.accounts.values.filter { clientIDs.contains($0.clientID) }.count }
    }
}

extension InMemoryStore: OutboxQueries {
    /// Revocations by creation.
    public func pendingRevocations(limit: Int) async throws -> [RevocationJob] {
        tables.withLock { Array($0.revocations.values.sorted { $0.createdAt < $1.createdAt }.prefix(limit)) }
    }

    /// Deliveries in a state.
    public func webhooks(status: String, limit: Int) async throws -> [WebhookDeliveryStatus] {
        tables.withLock { Array($0.webhooks.filter { $0.status == status }.prefix(limit)) }
    }

    /// A notification's inbox record.
    public func notification(jti: String) async throws -> InboxEntry? {
        tables.withLock { $0.inbox[jti]?.entry }
    }
}

extension InMemoryStore: SigningKeyStore {
    /// Every key, by generation.
    public func signingKeys() async throws -> [SigningKeyRecord] {
        tables.withLock { $0.signingKeys.sorted { $0.generation < $1.generation } }
    }

    /// Adds, withdraws and deletes keys at once; `false` when the new key's generation is taken.
    public func changeSigningKeys(adding key: SigningKeyRecord?, withdrawing: [String], deleting: [String], at: Date) async throws -> Bool {
        tables.withLock { tables in
            if let key {
                guard !tables.signingKeys.contains(where: { $0.generation == key.generation }) else { return false }
                tables.signingKeys.append(key)
            }
            for index in tables.signingKeys.indices where withdrawing.contains(tables.signingKeys[index].id) {
                guard tables.signingKeys[index].withdrawnAt == nil else { continue }
                tables.signingKeys[index].withdrawnAt = at
                tables.signingKeys[index].sealedPrivateKey = nil
            }
            tables.signingKeys.removeAll { deleting.contains($0.id) }
            return true
        }
    }
}

extension InMemoryStore: WebFlowStateStore {
    /// Stores a state.
    public func insertWebFlowState(_ record: WebFlowStateRecord, now: Date) async throws {
        tables.withLock { $0.webFlowStates[record.stateHash] = record }
    }

    /// Removes the state and returns it.
    public func takeWebFlowState(hash: String) async throws -> WebFlowStateRecord? {
        tables.withLock { $0.webFlowStates.removeValue(forKey: hash) }
    }
}

extension InMemoryStore: AccountImportStore {
    /// The ids and subject hashes some account has.
    public func takenAccountKeys(
        ids: [String],
        subjectHashes: [String],
        subjectDigests: [String]
    ) async throws -> (ids: Set<String>, subjectHashes: Set<String>, deletedDigests: Set<String>) {
        tables.withLock { tables in
            let accounts = tables.accounts.values.filter { ids.contains($0.id) || subjectHashes.contains($0.subjectHash) }
            let deleted = Set(tables.audit.map(\.subjectDigest)).intersection(subjectDigests)
            return (Set(accounts.map(\.id)), Set(accounts.map(\.subjectHash)), deleted)
        }
    }

    /// Creates the accounts whose id and subject hash are free, with their events.
    public func insertImported(_ accounts: [ImportedAccount]) async throws -> Set<String> {
        tables.withLock { tables in
            var created: Set<String> = []
            let deleted = Set(tables.audit.map(\.subjectDigest))
            for account in accounts where tables.accounts[account.record.id] == nil && !deleted.contains(account.subjectDigest) {
                guard !tables.accounts.values.contains(where: { $0.subjectHash == account.record.subjectHash }) else { continue }
                tables.accounts[account.record.id] = account.record
                tables.add([account.event])
                created.insert(account.record.id)
            }
            return created
        }
    }
}
