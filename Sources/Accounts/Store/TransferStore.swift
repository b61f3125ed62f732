public import Foundation

/// Where an account stands in an app transfer (TN3159).
///
/// Sending side: `exported`, `revoked_before_transfer`, `failed`. Receiving side: `imported`, `exchanged`,
/// `revoked_before_transfer`, `failed`.
public enum TransferState: String, Sendable, CaseIterable, Codable {
    /// Sending side: Apple gave the account's transfer identifier, recorded sealed.
    case exported
    /// Receiving side: the account exists here, keyed by its transfer identifier; the exchange is not done yet.
    case imported
    /// Receiving side: the transfer identifier was exchanged for this team's subject.
    case exchanged
    /// Apple's `invalid_request` for the user: they had stopped using Sign in with Apple with the app.
    case revokedBeforeTransfer = "revoked_before_transfer"
    /// Apple refused or could not be reached; the next run tries again.
    case failed
    /// Receiving side: the account was deleted after its import; only its id is kept, so that the import does not
    /// bring it back.
    case deleted
}

/// Which side of a transfer a row belongs to.
public enum TransferSide: String, Sendable, CaseIterable {
    /// `orchard transfer export`.
    case export
    /// `orchard transfer import`.
    case `import`
}

/// One account's transfer, as the store keeps it.
public struct TransferRecord: Sendable, Equatable {
    /// The account.
    public var accountID: String
    /// The account's client id.
    public var clientID: String
    /// The receiving team (sending side only).
    public var targetTeam: String?
    /// Where it stands.
    public var state: TransferState
    /// The transfer identifier Apple gave, sealed under the account's `transfer_sub` context (sending side only).
    public var sealedTransferSub: String?
    /// Tries at Apple so far.
    public var attempts: Int
    /// Why the last try failed.
    public var lastError: String?
    /// When the row last changed.
    public var updatedAt: Date

    /// Creates a record.
    public init(
        accountID: String,
        clientID: String,
        targetTeam: String?,
        state: TransferState,
        sealedTransferSub: String?,
        attempts: Int,
        lastError: String?,
        updatedAt: Date
    ) {
        self.accountID = accountID
        self.clientID = clientID
        self.targetTeam = targetTeam
        self.state = state
        self.sealedTransferSub = sealedTransferSub
        self.attempts = attempts
        self.lastError = lastError
        self.updatedAt = updatedAt
    }
}

/// A pending import completed: the account re-keyed to this team's subject, and `account.transferred` sent, in the
/// same transaction as whatever completes it (the import's exchange or a sign-in).
public struct TransferCompletion: Sendable {
    /// The `account.transferred` deliveries.
    public var webhooks: [WebhookDelivery]
    /// The account's `transferred` history event.
    public var history: [HistoryEvent]
    /// When.
    public var at: Date

    /// Creates a completion.
    public init(webhooks: [WebhookDelivery], history: [HistoryEvent] = [], at: Date) {
        self.webhooks = webhooks
        self.history = history
        self.at = at
    }
}

/// The rows behind `orchard transfer`: each account's transfer state on either side.
public protocol TransferStore: Sendable {
    /// The account's transfer row on `side`, if any.
    func transfer(side: TransferSide, accountID: String) async throws -> TransferRecord?
    /// Up to `limit` rows of `side` after `afterID`, by account id.
    func transfers(side: TransferSide, afterID: String?, limit: Int) async throws -> [TransferRecord]
    /// Writes the sending side's row of an account (insert or replace).
    func recordExport(_ record: TransferRecord) async throws
    /// Creates an imported account and its `imported` row in one transaction; `false` (nothing written) when an account
    /// with its id or subject hash exists already.
    func insertImport(account: AccountRecord, record: TransferRecord) async throws -> Bool
    /// Sets an import's state (`imported`, `failed` or `revoked_before_transfer`) while it is `imported` or `failed`.
    func markImport(accountID: String, state: TransferState, lastError: String?, at: Date) async throws
    /// Completes a pending import: writes the re-keyed `account` (subject, email), marks the row `exchanged` and queues
    /// `completion`'s webhooks, only while the row is `imported` or `failed`; `false` (nothing written) otherwise.
    func completeImport(account: AccountRecord, completion: TransferCompletion) async throws -> Bool
    /// How many rows of `side` are in each state.
    func transferCounts(side: TransferSide) async throws -> [TransferState: Int]
    /// A page of the accounts of `clientIDs`, by id after `afterID` (the sending side walks them page by page).
    func accounts(clientIDs: Set<String>, afterID: String?, limit: Int) async throws -> [AccountRecord]
    /// How many accounts `clientIDs` have (the sending side's progress).
    func accountCount(clientIDs: Set<String>) async throws -> Int
    /// The account with this id.
    func account(id: String) async throws -> AccountRecord?
}
