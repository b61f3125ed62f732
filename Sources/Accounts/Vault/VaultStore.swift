/// The tables that hold sealed values, and their columns, as key rotation walks them.
public enum VaultTable: String, Sendable, CaseIterable {
    /// Accounts: the subject, email, name and Apple's tokens (and the subject's lookup hash).
    case accounts
    /// Tokens queued for revocation.
    case revocations
    /// Notification events waiting to be processed.
    case notificationInbox = "notification_inbox"
    /// Web-flow states' nonces.
    case webFlowStates = "web_flow_states"
    /// App transfer's transfer identifiers (sending side).
    case transferExports = "transfer_exports"
    /// Sessions' device labels.
    case sessions
    /// Access-token signing keys' private keys.
    case signingKeys = "signing_keys"
    /// History events' device labels.
    case accountEvents = "account_events"

    /// The column that identifies a row.
    public var keyColumn: String {
        switch self {
        case .accounts, .revocations, .sessions, .signingKeys, .accountEvents: "id"
        case .notificationInbox: "jti"
        case .webFlowStates: "state_hash"
        case .transferExports: "account_id"
        }
    }

    /// The columns that hold sealed values (some may be `NULL`).
    public var sealedColumns: [String] {
        switch self {
        case .accounts:
            ["sealed_subject", "sealed_email", "sealed_name", "sealed_refresh_token", "sealed_access_token", "sealed_identity_token"]
        case .revocations: ["sealed_token"]
        case .notificationInbox: ["sealed_event"]
        case .webFlowStates: ["sealed_nonce"]
        case .transferExports: ["sealed_transfer_sub"]
        case .sessions, .accountEvents: ["sealed_device"]
        case .signingKeys: ["sealed_private_key"]
        }
    }
}

/// One row's sealed values, by column (only the columns that hold one).
public struct SealedRow: Sendable {
    /// The row's key.
    public var key: String
    /// Sealed value by column.
    public var values: [String: String]
    /// The subject's lookup hash (accounts only).
    public var subjectHash: String?
    /// The email's lookup hash (accounts with an email only).
    public var emailHash: String?

    /// Creates a row.
    public init(key: String, values: [String: String], subjectHash: String?, emailHash: String? = nil) {
        self.key = key
        self.values = values
        self.subjectHash = subjectHash
        self.emailHash = emailHash
    }
}

/// Where ``VaultRotation`` reads and rewrites sealed values.
public protocol VaultStore: Sendable {
    /// Up to `limit` rows of `table` after `key` (in key order), with their sealed values.
    func sealedRows(in table: VaultTable, after key: String?, limit: Int) async throws -> [SealedRow]
    /// Replaces one row's sealed values (and, for an account, its lookup hashes) in its own transaction, only if they are
    /// still `row`'s (a running server may have changed the row meanwhile: then `false`, and the row is left as it is).
    func replaceSealed(
        in table: VaultTable,
        row: SealedRow,
        with values: [String: String],
        subjectHash: String?,
        emailHash: String?
    ) async throws -> Bool
}
