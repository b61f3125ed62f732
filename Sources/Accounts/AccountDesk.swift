public import AppleID
import Crypto
import Foundation
import Logging
public import Metrics

/// The coordinator of a user's own requests: nonces, sign-in, the session check, sign-out and the deletion a user or
/// an operator asks for. Everything else is a part of its own: account changes (``AccountChanges``), Apple's
/// notifications (``NotificationReceiver``, ``NotificationHandler``), refresh validation, revocations, app transfer
/// (``AppTransfer``). The HTTP routes, the CLI and the jobs call these; none re-implements them.
public final class AccountDesk: Sendable {
    let store: any AccountStore
    let changes: AccountChanges
    let vault: TokenVault
    let apple: any AppleGateway
    let clock: any WallClock
    let random: any RandomSource
    let configuration: AccountsConfiguration
    let timing: ValidationTiming
    let webhooks: WebhookFanout
    let wakeups: JobWakeups
    /// Where `orchard_sign_ins_total` goes.
    let metrics: any MetricsFactory

    /// Creates the coordinator over its parts.
    public init(
        store: any AccountStore,
        changes: AccountChanges,
        vault: TokenVault,
        apple: any AppleGateway,
        clock: any WallClock,
        random: any RandomSource,
        configuration: AccountsConfiguration,
        webhooks: WebhookFanout,
        wakeups: JobWakeups,
        metrics: any MetricsFactory
    ) {
        self.store = store
        self.changes = changes
        self.vault = vault
        self.apple = apple
        self.clock = clock
        self.random = random
        self.configuration = configuration
        self.timing = ValidationTiming(interval: configuration.refreshValidationInterval, random: random)
        self.webhooks = webhooks
        self.wakeups = wakeups
        self.metrics = metrics
    }

    var sealing: AccountSealing { AccountSealing(vault: vault) }

    // MARK: Nonces

    /// Issues a single-use nonce that lives ``AccountsConfiguration/nonceLifetime``.
    public func issueNonce() async throws(AccountsError) -> IssuedNonce {
        let raw = random.token()
        let expiresAt = clock.now().addingTimeInterval(configuration.nonceLifetime.seconds)
        try await storing { try await store.insertNonce(hash: AppleNonce.hash(raw), expiresAt: expiresAt) }
        return IssuedNonce(value: raw, expiresAt: expiresAt)
    }

    // MARK: Sessions

    /// The session check (`GET /v1/session`): the live session behind a bearer token, with its account. The session
    /// memory may answer; a session that has ended is refused either way.
    ///
    /// - Throws: `session_invalid` for an unknown or expired token, `session_revoked` (with the reason) for one that was
    ///   ended early.
    ///
    /// When the memory answered, the opened account is kept beside its entry (``SessionMemo``), so a session checked
    /// again is not opened again; the session rules above still apply to every check.
    public func session(token: String) async throws(AccountsError) -> SessionInfo {
        let found = try await checkedSession(token: token)
        recordSeen(lastSeenAt: found.session.lastSeenAt, tokenHash: found.session.tokenHash)
        let memo = found.memo
        let view: AccountView
        if let opened = memo?.value(of: AccountView.self) {
            view = opened
        } else {
            view = try sealing.view(of: try account(of: found))
            memo?.keep(view)
        }
        return SessionInfo(createdAt: found.session.createdAt, expiresAt: found.session.expiresAt, account: view, memo: memo)
    }

    /// Ends the session behind a bearer token (sign-out); touches nothing at Apple.
    public func signOut(token: String) async throws(AccountsError) {
        let (session, _) = try await liveSession(token: token)
        _ = try await storing { try await store.endSession(tokenHash: session.tokenHash, reason: .signedOut, cause: .user, at: clock.now()) }
    }

    /// The live session behind a token, with its account's shown fields, as the database has it (every request that
    /// writes asks this way).
    func liveSession(token: String) async throws(AccountsError) -> (SessionRecord, SealedAccountView) {
        let tokenHash = try Self.tokenHash(token)
        return try live(try await storing { try await store.session(tokenHash: tokenHash) })
    }

    /// The live session behind a token, with its account's shown fields, for a session check or an access token: the
    /// session memory may answer, and then the memo beside its entry comes too (`nil` for a read from the database).
    /// What the store found is returned as it is (its fields are not copied out: the memory hands the same session to
    /// every check), once the session rules held.
    func checkedSession(token: String) async throws(AccountsError) -> SessionWithAccount {
        let tokenHash = try Self.tokenHash(token)
        var found = store.rememberedSession(tokenHash: tokenHash)
        if found == nil { found = try await storing { try await store.checkSession(tokenHash: tokenHash) } }
        return try followsRules(found)
    }

    /// The SHA-256 a session is found by, or `session_invalid` for no token or one too long to be Orchard's.
    private static func tokenHash(_ token: String) throws(AccountsError) -> String {
        guard !token.isEmpty, token.utf8.count <= 512 else { throw AccountsError(.sessionInvalid, "no session token") }
        return sha256Hex(token)
    }

    /// The session rules (ended, expired, account deleted) applied to what the store found.
    private func live(_ found: SessionWithAccount?) throws(AccountsError) -> (SessionRecord, SealedAccountView) {
        let found = try followsRules(found)
        return (found.session, try account(of: found))
    }

    /// The account of a session ``checkedSession(token:)`` let through, whose rules already refused a deleted account.
    func account(of checked: SessionWithAccount) throws(AccountsError) -> SealedAccountView {
        guard let account = checked.account else { throw Self.accountDeleted }
        return account
    }

    /// What the store found, once the session rules (ended, expired, account deleted) held for it.
    private func followsRules(_ found: SessionWithAccount?) throws(AccountsError) -> SessionWithAccount {
        guard let found else { throw AccountsError(.sessionInvalid, "unknown session") }
        if let reason = found.session.endReason {
            throw AccountsError(.sessionRevoked, "the session was ended", sessionEndReason: reason)
        }
        guard found.session.expiresAt > clock.now() else { throw AccountsError(.sessionInvalid, "the session expired") }
        // A pattern, not `!= nil`, which copied the account's fields out of the shared storage.
        if case .none = found.account { throw Self.accountDeleted }
        return found
    }

    private static var accountDeleted: AccountsError {
        AccountsError(.sessionRevoked, "the account was deleted", sessionEndReason: .accountDeleted)
    }

    // MARK: Operators

    /// One account, opened, for an operator.
    public func account(id: String) async throws(AccountsError) -> AccountView {
        guard let record = try await storing({ try await store.account(id: id) }) else {
            throw AccountsError(.notFound, "no account with that id")
        }
        return try sealing.view(of: record.sealedView)
    }

    /// A page of accounts, opened, for an operator.
    public func listAccounts(limit: Int = 100, afterID: String? = nil) async throws(AccountsError) -> [AccountView] {
        let records = try await storing { try await store.accounts(limit: limit, afterID: afterID) }
        var views: [AccountView] = []
        for record in records { views.append(try sealing.view(of: record.sealedView)) }
        return views
    }

    /// Whether the database answers (`/health/ready`).
    /// - Throws: `storage_unavailable`, whose reason says what kept the database from answering (for the log).
    public func checkStorage() async throws(AccountsError) {
        do {
            try await store.checkReachable()
        } catch let error as StoreError {
            throw AccountsError.storage(error)
        } catch {
            throw AccountsError(.storageUnavailable, "the database does not answer: \(String(reflecting: type(of: error)))")
        }
    }

    /// SHA-256 of a string, lowercase hex.
    static func sha256Hex(_ value: String) -> String {
        SHA256.hash(utf8: value).hexString
    }
}
