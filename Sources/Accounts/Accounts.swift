public import AppleID
import Crypto
import Foundation
public import Logging
public import Metrics
import Synchronization

/// The account lifecycle, in one place: sign-in, sessions and (with later capabilities) deletion and Apple's
/// notifications. The HTTP routes, the CLI and the notification handler all call these operations.
public final class Accounts: Sendable {
    let store: any AccountStore & LifecycleStore
    let vault: TokenVault
    let apple: any AppleGateway
    let clock: any WallClock
    let random: any RandomSource
    let configuration: AccountsConfiguration
    let logger: Logger
    /// Where the lifecycle's counters and gauges go (`orchard_sign_ins_total`, `orchard_revocations_total`, ...).
    let metrics: any MetricsFactory
    /// Wakes the background workers when a request wrote work for them.
    public let wakeups: JobWakeups
    /// The one job engine: the server's `JobService` runs every handler on it, and a deletion runs its own revocation.
    public let engine: JobEngine
    /// The installation's audit salt once read: it never changes after the first migration, and every notification
    /// needs it.
    let auditSaltCache = Mutex<String?>(nil)

    /// Creates the lifecycle over its dependencies.
    ///
    /// `metrics` defaults to the process's bootstrapped factory; the composition root and tests pass their own.
    public init(
        store: any AccountStore & LifecycleStore,
        vault: TokenVault,
        apple: any AppleGateway,
        clock: any WallClock,
        random: any RandomSource = SystemRandomSource(),
        configuration: AccountsConfiguration = AccountsConfiguration(),
        wakeups: JobWakeups = JobWakeups(),
        metrics: any MetricsFactory = MetricsSystem.factory,
        logger: Logger
    ) {
        self.wakeups = wakeups
        self.engine = JobEngine(clock: clock, metrics: metrics)
        self.metrics = metrics
        self.store = store
        self.vault = vault
        self.apple = apple
        self.clock = clock
        self.random = random
        self.configuration = configuration
        self.logger = logger
    }

    // MARK: Nonces

    /// Issues a single-use nonce that lives ``AccountsConfiguration/nonceLifetime``.
    public func issueNonce() async throws(AccountsError) -> IssuedNonce {
        let raw = randomToken()
        let expiresAt = clock.now().addingTimeInterval(configuration.nonceLifetime.seconds)
        do {
            try await store.insertNonce(hash: AppleNonce.hash(raw), expiresAt: expiresAt)
        } catch {
            throw AccountsError.storage(error)
        }
        return IssuedNonce(value: raw, expiresAt: expiresAt)
    }

    // MARK: Sessions

    /// The live session behind a bearer token, with its account.
    ///
    /// - Throws: `session_invalid` for an unknown or expired token, `session_revoked` (with the reason) for one that was
    ///   ended early.
    public func session(token: String) async throws(AccountsError) -> SessionInfo {
        let (session, account) = try await liveSession(token: token)
        return SessionInfo(createdAt: session.createdAt, expiresAt: session.expiresAt, account: try view(of: account))
    }

    /// Ends the session behind a bearer token (sign-out); touches nothing at Apple.
    public func signOut(token: String) async throws(AccountsError) {
        let (session, _) = try await liveSession(token: token)
        do {
            _ = try await store.endSession(tokenHash: session.tokenHash, reason: .signedOut, at: clock.now())
        } catch {
            throw AccountsError.storage(error)
        }
    }

    /// The live session behind a token, with its account's shown fields.
    func liveSession(token: String) async throws(AccountsError) -> (SessionRecord, SealedAccountView) {
        let tokenHash = try Self.sessionTokenHash(token)
        let found = try await storing { try await store.session(tokenHash: tokenHash) }
        return try live(found)
    }

    /// The stored hash of a bearer token, or `session_invalid` for one that cannot be a token.
    private static func sessionTokenHash(_ token: String) throws(AccountsError) -> String {
        guard !token.isEmpty, token.utf8.count <= 512 else { throw AccountsError(.sessionInvalid, "no session token") }
        return sha256Hex(token)
    }

    /// The session rules, whichever account fields were read with the session.
    private func live(_ found: SessionWithAccount?) throws(AccountsError) -> (SessionRecord, SealedAccountView) {
        guard let session = found?.session else { throw AccountsError(.sessionInvalid, "unknown session") }
        let account = found?.account
        if let reason = session.endReason {
            throw AccountsError(.sessionRevoked, "the session was ended", sessionEndReason: reason)
        }
        guard session.expiresAt > clock.now() else { throw AccountsError(.sessionInvalid, "the session expired") }
        guard let account else {
            throw AccountsError(.sessionRevoked, "the account was deleted", sessionEndReason: .accountDeleted)
        }
        return (session, account)
    }

    // MARK: Operators

    /// One account, opened, for an operator.
    public func account(id: String) async throws(AccountsError) -> AccountView {
        let record: AccountRecord?
        do {
            record = try await store.account(id: id)
        } catch {
            throw AccountsError.storage(error)
        }
        guard let record else { throw AccountsError(.notFound, "no account with that id") }
        return try view(of: record)
    }

    /// A page of accounts, opened, for an operator.
    public func listAccounts(limit: Int = 100, afterID: String? = nil) async throws(AccountsError) -> [AccountView] {
        do {
            return try await store.accounts(limit: limit, afterID: afterID).map { try view(of: $0) }
        } catch let error as AccountsError {
            throw error
        } catch {
            throw AccountsError.storage(error)
        }
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

    // MARK: Helpers

    /// Opens an account record for display.
    func view(of record: AccountRecord) throws(AccountsError) -> AccountView {
        try view(of: record.sealedView)
    }

    /// An account's shown fields, opened.
    func view(of record: SealedAccountView) throws(AccountsError) -> AccountView {
        do {
            let subject = try vault.open(record.sealedSubject, context: Self.context(record.id, "subject"))
            let email = try record.sealedEmail.map { try vault.open($0, context: Self.context(record.id, "email")) }
            let name = try record.sealedName.map { sealed -> AccountView.Name? in
                let json = try vault.open(sealed, context: Self.context(record.id, "name"))
                return try? JSONDecoder().decode(AccountView.Name.self, from: Data(json.value.utf8))
            }
            return AccountView(
                id: record.id,
                appleSub: subject.value,
                email: email?.value,
                isPrivateEmail: record.isPrivateEmail,
                emailForwarding: record.emailForwarding,
                name: name ?? nil,
                createdAt: record.createdAt,
                appleCredential: record.appleCredential,
                lastValidatedAt: record.lastValidatedAt
            )
        } catch {
            logger.error("cannot open a sealed account value", metadata: ["account.id": "\(record.id)", "error": "\(error)"])
            throw AccountsError(.storageUnavailable, "a stored value cannot be opened with the configured vault keys")
        }
    }

    /// A new account keyed by `subject`, sealed, with no email, name or Apple tokens yet (`apple_credential` unknown).
    func newAccount(id: String, subject: Redacted<String>, clientID: String, at now: Date) throws -> AccountRecord {
        AccountRecord(
            id: id,
            subjectHash: vault.subjectHash(subject),
            sealedSubject: try vault.seal(subject.value, context: Self.context(id, "subject")),
            sealedEmail: nil,
            isPrivateEmail: false,
            emailForwarding: .enabled,
            sealedName: nil,
            clientID: clientID,
            sealedRefreshToken: nil,
            sealedAccessToken: nil,
            sealedIdentityToken: nil,
            appleCredential: .unknown,
            lastValidatedAt: nil,
            nextValidationAt: nil,
            createdAt: now,
            updatedAt: now
        )
    }

    /// A name as stored: JSON `{"first_name", "last_name"}`, sealed under the account's `name` context.
    func sealName(_ name: AccountView.Name, accountID: String) throws -> String {
        try vault.seal(String(decoding: try JSONEncoder().encode(name), as: UTF8.self), context: Self.context(accountID, "name"))
    }

    /// The additional authenticated data that binds a sealed value to its record and field.
    static func context(_ accountID: String, _ field: String) -> String {
        "account:\(accountID):\(field)"
    }

    /// A 256-bit random value, base64url without padding.
    func randomToken() -> String {
        Base64URL.encode(random.bytes(32))
    }

    /// A random id with a prefix (`acct_`, `rev_`, `evt_`, `whd_`, `aud_`).
    func randomID(_ prefix: String) -> String {
        prefix + random.bytes(16).hexString
    }

    /// SHA-256 of a string, lowercase hex.
    static func sha256Hex(_ value: String) -> String {
        SHA256.hash(utf8: value).hexString
    }
}
