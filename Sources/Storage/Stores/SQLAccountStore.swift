public import Accounts
public import Foundation
import SQLKit

/// ``Accounts/AccountStore`` in SQL that SQLite and PostgreSQL both accept.
public struct SQLAccountStore: AccountStore {
    let database: any DatabaseClient
    /// The owner of the session memory, and the one path of every change that ends sessions or changes what a session
    /// check shows.
    public let keeper: SessionKeeper

    /// Creates the store over the keeper of the sessions, on the database the keeper runs its changes on.
    public init(keeper: SessionKeeper) {
        self.database = keeper.database
        self.keeper = keeper
    }

    /// How a claim's subquery locks the rows it picks: on PostgreSQL `FOR UPDATE SKIP LOCKED`, so concurrent replicas
    /// each take different rows; SQLite has one writer and drops the clause.
    var lockingClause: String { database.flavor == .postgres ? "FOR UPDATE SKIP LOCKED" : "" }

    static let accountColumns = """
        id, subject_hash, sealed_subject, sealed_email, is_private_email, email_forwarding, sealed_name, client_id,
        sealed_refresh_token, sealed_access_token, sealed_identity_token, apple_credential, last_validated_at,
        next_validation_at, created_at, updated_at, granted_at, org_id, email_verified, email_hash
        """

    /// ``accountColumns`` read from the alias `a`, each under its own name.
    static let qualifiedAccountColumns = qualified(accountColumns, table: "a")

    /// Stores an issued nonce by its hash.
    public func insertNonce(hash: String, expiresAt: Date) async throws {
        try await database.withDatabase { db in
            try await db.raw("INSERT INTO nonces (hash, expires_at) VALUES (\(bind: hash), \(bind: expiresAt.milliseconds))").run()
        }
    }

    /// Consumes the first issued, unexpired, unused nonce among `hashes`.
    ///
    /// A read decides first when nothing can be consumed (a nonce never issued, expired or used), so a forged or
    /// replayed token costs no write; only a nonce that may be consumable takes the writer.
    public func consumeNonce(hashes: [String], now: Date) async throws -> NonceConsumption {
        guard !hashes.isEmpty else { return .unknownOrExpired }
        let rows = try await database.read(Self.nonceStates(hashes))
        if let refusal = try Self.nonceRefusal(rows, now: now) { return refusal }
        return try await database.transaction { db in
            for hash in hashes {
                let consumed = try await db.raw(
                    """
                    UPDATE nonces SET consumed_at = \(bind: now.milliseconds)
                    WHERE hash = \(bind: hash) AND consumed_at IS NULL AND expires_at > \(bind: now.milliseconds)
                    RETURNING hash
                    """
                ).all()
                if !consumed.isEmpty { return .consumed }
            }
            for hash in hashes {
                let row = try await db.raw("SELECT consumed_at FROM nonces WHERE hash = \(bind: hash)").first()
                if let row, try row.date("consumed_at") != nil { return .alreadyConsumed }
            }
            return .unknownOrExpired
        }
    }

    /// Whether each of `hashes` that was issued is consumed, and when it expires.
    private static func nonceStates(_ hashes: [String]) -> SQLQueryString {
        "SELECT consumed_at, expires_at FROM nonces WHERE hash IN (\(binds: hashes))"
    }

    /// Why the nonces in `rows` (``nonceStates(_:)``) cannot be consumed at `now`, or `nil` when one may be.
    private static func nonceRefusal(_ rows: [any SQLRow], now: Date) throws -> NonceConsumption? {
        let known = try rows.map {
            (consumed: try $0.date("consumed_at") != nil, expired: try $0.date("expires_at").map { $0 <= now } ?? true)
        }
        if known.contains(where: { !$0.consumed && !$0.expired }) { return nil }
        return known.contains(where: \.consumed) ? .alreadyConsumed : .unknownOrExpired
    }

    /// The account whose subject hash is one of `subjectHashes`.
    public func account(subjectHashes: [String]) async throws -> AccountRecord? {
        guard !subjectHashes.isEmpty else { return nil }
        return try await database.read(
            "SELECT \(unsafeRaw: Self.accountColumns) FROM accounts WHERE subject_hash IN (\(binds: subjectHashes))"
        ).first.map(Self.account(from:))
    }

    /// Every account whose subject hash is one of `subjectHashes`, in one read.
    public func accounts(subjectHashes: [String]) async throws -> [AccountRecord] {
        guard !subjectHashes.isEmpty else { return [] }
        return try await database.read(
            "SELECT \(unsafeRaw: Self.accountColumns) FROM accounts WHERE subject_hash IN (\(binds: subjectHashes))"
        ).map(Self.account(from:))
    }

    /// The account with this id.
    public func account(id: String) async throws -> AccountRecord? {
        try await database.read("SELECT \(unsafeRaw: Self.accountColumns) FROM accounts WHERE id = \(bind: id)").first.map(Self.account(from:))
    }

    /// Accounts ordered by id.
    public func accounts(limit: Int, afterID: String?) async throws -> [AccountRecord] {
        try await database.read(
            """
            SELECT \(unsafeRaw: Self.accountColumns) FROM accounts WHERE id > \(bind: afterID ?? "")
            ORDER BY id LIMIT \(bind: limit)
            """
        ).map(Self.account(from:))
    }

    /// Creates or updates the account and adds the session in one transaction.
    public func recordSignIn(_ signIn: SignInRecord) async throws -> Bool {
        let (account, session) = (signIn.account, signIn.session)
        // A returning user's sign-in changes what a check of the account's other sessions shows.
        let write: @Sendable (any SQLDatabase) async throws -> Bool = { db in
            if signIn.isNew {
                let inserted = try await db.raw(
                    """
                    INSERT INTO accounts (\(unsafeRaw: Self.accountColumns)) VALUES (
                        \(bind: account.id), \(bind: account.subjectHash), \(bind: account.sealedSubject),
                        \(bind: account.sealedEmail), \(bind: account.isPrivateEmail ? 1 : 0),
                        \(bind: account.emailForwarding.rawValue), \(bind: account.sealedName), \(bind: account.clientID),
                        \(bind: account.sealedRefreshToken), \(bind: account.sealedAccessToken),
                        \(bind: account.sealedIdentityToken), \(bind: account.appleCredential.rawValue),
                        \(bind: account.lastValidatedAt?.milliseconds), \(bind: account.nextValidationAt?.milliseconds),
                        \(bind: account.createdAt.milliseconds), \(bind: account.updatedAt.milliseconds),
                        \(bind: account.grantedAt?.milliseconds), \(bind: account.orgID), \(bind: account.emailVerified ? 1 : 0),
                        \(bind: account.emailHash))
                    ON CONFLICT (subject_hash) DO NOTHING
                    RETURNING id
                    """
                ).all()
                guard !inserted.isEmpty else { throw StoreError.conflict }
            } else {
                let updated = try await db.raw(
                    """
                    UPDATE accounts SET subject_hash = \(bind: account.subjectHash), sealed_subject = \(bind: account.sealedSubject),
                        sealed_email = \(bind: account.sealedEmail), email_hash = \(bind: account.emailHash),
                        is_private_email = \(bind: account.isPrivateEmail ? 1 : 0), email_forwarding = \(bind: account.emailForwarding.rawValue), sealed_name = \(bind: account.sealedName),
                        client_id = \(bind: account.clientID), sealed_refresh_token = \(bind: account.sealedRefreshToken),
                        sealed_access_token = \(bind: account.sealedAccessToken),
                        sealed_identity_token = \(bind: account.sealedIdentityToken),
                        apple_credential = \(bind: account.appleCredential.rawValue),
                        last_validated_at = \(bind: account.lastValidatedAt?.milliseconds),
                        next_validation_at = \(bind: account.nextValidationAt?.milliseconds),
                        updated_at = \(bind: account.updatedAt.milliseconds), granted_at = \(bind: account.grantedAt?.milliseconds),
                        org_id = \(bind: account.orgID), email_verified = \(bind: account.emailVerified ? 1 : 0)
                    WHERE id = \(bind: account.id)
                    RETURNING id
                    """
                ).all()
                guard !updated.isEmpty else {
                    // Deleted meanwhile: no session for a gone account; the grant just given goes to be revoked.
                    if let job = signIn.revocationIfGone { try await Self.insertRevocation(job, on: db) }
                    return false
                }
                if let completion = signIn.completesTransfer {
                    _ = try await Self.markExchanged(accountID: account.id, completion: completion, on: db)
                }
            }
            try await db.raw(
                """
                INSERT INTO sessions (id, token_hash, account_id, created_at, expires_at, sealed_device, client_id)
                VALUES (\(bind: session.id), \(bind: session.tokenHash), \(bind: session.accountID),
                        \(bind: session.createdAt.milliseconds), \(bind: session.expiresAt.milliseconds),
                        \(bind: session.sealedDevice), \(bind: session.clientID))
                """
            ).run()
            try await Self.insertEvents(signIn.history, on: db)
            return true
        }
        guard signIn.isNew else { return try await keeper.changing(.accounts([account.id])) { try await write($0.db) } }
        return try await database.transaction(write)
    }

    /// The session with this token hash and its account's shown fields for a session check: from the session memory
    /// when it may answer, else one indexed read over both primary keys, without Apple's sealed tokens (the session
    /// check's read, which `Benchmarks/run` measures).
    public func checkSession(tokenHash: String) async throws -> SessionWithAccount? {
        try await keeper.check(tokenHash: tokenHash) { try await sessions(tokenHashes: $0) }
    }

    /// The session as the session memory remembers it, when the memory answers for it now.
    public func rememberedSession(tokenHash: String) -> SessionWithAccount? {
        keeper.remembered(tokenHash: tokenHash)
    }

    /// The session with this token hash and its account's shown fields, as the database has it now.
    public func session(tokenHash: String) async throws -> SessionWithAccount? {
        try await keeper.fresh(tokenHash: tokenHash) { try await sessions(tokenHashes: $0) }
    }

    /// The sessions with these token hashes and their accounts, from the database (PostgreSQL binds the list as one
    /// array, so that the statement is prepared once for any length).
    func sessions(tokenHashes: [String]) async throws -> [SessionWithAccount] {
        let matching: SQLQueryString =
            database.flavor == .postgres
            ? "s.token_hash = ANY(\(bind: tokenHashes))" : "s.token_hash IN (\(binds: tokenHashes))"
        return try await database.read(
            """
            SELECT \(unsafeRaw: Self.sessionColumns), a.id AS id, a.sealed_subject AS sealed_subject,
                a.sealed_email AS sealed_email, a.is_private_email AS is_private_email,
                a.email_forwarding AS email_forwarding, a.sealed_name AS sealed_name,
                a.apple_credential AS apple_credential, a.last_validated_at AS last_validated_at,
                a.created_at AS created_at, a.client_id AS client_id, a.org_id AS org_id, a.email_verified AS email_verified
            FROM sessions s LEFT JOIN accounts a ON a.id = s.account_id
            WHERE \(matching)
            """
        ).map { row in
            SessionWithAccount(session: try Self.session(from: row), account: try row.decodeNil(column: "id") ? nil : try Self.sealedView(from: row))
        }
    }

    /// Ends a live session.
    public func endSession(tokenHash: String, reason: SessionEndReason, cause: SignOutCause, at: Date) async throws -> Bool {
        try await keeper.ending(.sessions([tokenHash])) { change in
            let ended = try await change.endSessions(reason: reason, at: at.milliseconds)
            try await Self.insertSignOuts(sessionIDs: ended, cause: cause, at: at, on: change.db)
            return !ended.isEmpty
        }
    }

    /// Runs a trivial query; throws what kept the database from answering it.
    public func checkReachable() async throws {
        _ = try await database.read("SELECT 1 AS one")
    }

    /// A session's columns from the alias `s`, each under a `session_` alias (``session(from:)`` reads them).
    static let sessionColumns = """
        s.id AS session_id, s.token_hash AS session_token_hash, s.account_id AS session_account_id,
        s.created_at AS session_created_at, s.expires_at AS session_expires_at, s.ended_at AS session_ended_at,
        s.end_reason AS session_end_reason, s.sealed_device AS session_sealed_device,
        s.last_seen_at AS session_last_seen_at, s.client_id AS session_client_id
        """

    /// A session read under the `session_` aliases of ``sessionColumns``.
    static func session(from row: any SQLRow) throws -> SessionRecord {
        SessionRecord(
            id: try row.string("session_id"),
            tokenHash: try row.string("session_token_hash"),
            accountID: try row.string("session_account_id"),
            createdAt: try row.date("session_created_at") ?? Date(timeIntervalSince1970: 0),
            expiresAt: try row.date("session_expires_at") ?? Date(timeIntervalSince1970: 0),
            endedAt: try row.date("session_ended_at"),
            endReason: try row.optionalString("session_end_reason").flatMap(SessionEndReason.init(rawValue:)),
            sealedDevice: try row.optionalString("session_sealed_device"),
            lastSeenAt: try row.date("session_last_seen_at"),
            clientID: try row.optionalString("session_client_id")
        )
    }

    /// The shown fields of an account row.
    static func sealedView(from row: any SQLRow) throws -> SealedAccountView {
        SealedAccountView(
            id: try row.string("id"),
            sealedSubject: try row.string("sealed_subject"),
            sealedEmail: try row.optionalString("sealed_email"),
            isPrivateEmail: try row.decode(column: "is_private_email", as: Int.self) != 0,
            emailForwarding: EmailForwarding(rawValue: try row.string("email_forwarding")) ?? .enabled,
            sealedName: try row.optionalString("sealed_name"),
            appleCredential: AppleCredentialState(rawValue: try row.string("apple_credential")) ?? .unknown,
            lastValidatedAt: try row.date("last_validated_at"),
            createdAt: try row.date("created_at") ?? Date(timeIntervalSince1970: 0),
            clientID: try row.string("client_id"),
            orgID: try row.optionalString("org_id"),
            emailVerified: try row.decode(column: "email_verified", as: Int.self) != 0
        )
    }

    static func account(from row: any SQLRow) throws -> AccountRecord {
        AccountRecord(
            id: try row.string("id"),
            subjectHash: try row.string("subject_hash"),
            sealedSubject: try row.string("sealed_subject"),
            sealedEmail: try row.optionalString("sealed_email"),
            isPrivateEmail: try row.decode(column: "is_private_email", as: Int.self) != 0,
            emailForwarding: EmailForwarding(rawValue: try row.string("email_forwarding")) ?? .enabled,
            sealedName: try row.optionalString("sealed_name"),
            clientID: try row.string("client_id"),
            sealedRefreshToken: try row.optionalString("sealed_refresh_token"),
            sealedAccessToken: try row.optionalString("sealed_access_token"),
            sealedIdentityToken: try row.optionalString("sealed_identity_token"),
            appleCredential: AppleCredentialState(rawValue: try row.string("apple_credential")) ?? .unknown,
            lastValidatedAt: try row.date("last_validated_at"),
            nextValidationAt: try row.date("next_validation_at"),
            createdAt: try row.date("created_at") ?? Date(timeIntervalSince1970: 0),
            updatedAt: try row.date("updated_at") ?? Date(timeIntervalSince1970: 0),
            grantedAt: try row.date("granted_at"),
            orgID: try row.optionalString("org_id"),
            emailVerified: try row.decode(column: "email_verified", as: Int.self) != 0,
            emailHash: try row.optionalString("email_hash")
        )
    }
}

/// The operators' reads of the queues, each written beside its queue's other statements.
extension SQLAccountStore: OutboxQueries {}
