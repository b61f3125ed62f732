public import Accounts
public import Foundation
import SQLKit

extension SQLAccountStore: TransferStore {
    /// The account's transfer row on `side`.
    public func transfer(side: TransferSide, accountID: String) async throws -> TransferRecord? {
        try await database.read(
            "SELECT \(unsafeRaw: Self.transferColumns(side)) FROM \(unsafeRaw: Self.table(side)) WHERE account_id = \(bind: accountID)"
        ).first.map { try Self.transfer(from: $0, side: side) }
    }

    /// Rows of `side` after `afterID`, by account id.
    public func transfers(side: TransferSide, afterID: String?, limit: Int) async throws -> [TransferRecord] {
        try await database.read(
            """
            SELECT \(unsafeRaw: Self.transferColumns(side)) FROM \(unsafeRaw: Self.table(side))
            WHERE account_id > \(bind: afterID ?? "") ORDER BY account_id LIMIT \(bind: limit)
            """
        ).map { try Self.transfer(from: $0, side: side) }
    }

    /// Inserts or replaces the sending side's row.
    public func recordExport(_ record: TransferRecord) async throws {
        try await database.withDatabase { db in
            try await db.raw(
                """
                INSERT INTO transfer_exports (account_id, client_id, target_team, state, sealed_transfer_sub, attempts, last_error,
                    updated_at)
                VALUES (\(bind: record.accountID), \(bind: record.clientID), \(bind: record.targetTeam ?? ""),
                    \(bind: record.state.rawValue), \(bind: record.sealedTransferSub), \(bind: record.attempts), \(bind: record.lastError),
                    \(bind: record.updatedAt.milliseconds))
                ON CONFLICT (account_id) DO UPDATE SET client_id = EXCLUDED.client_id, target_team = EXCLUDED.target_team,
                    state = EXCLUDED.state, sealed_transfer_sub = EXCLUDED.sealed_transfer_sub, attempts = EXCLUDED.attempts,
                    last_error = EXCLUDED.last_error, updated_at = EXCLUDED.updated_at
                """
            ).run()
        }
    }

    /// Creates an imported account and its `imported` row, unless its id or subject hash is taken.
    public func insertImport(account: AccountRecord, record: TransferRecord) async throws -> Bool {
        try await database.transaction { db in
            let taken = try await db.raw(
                "SELECT id FROM accounts WHERE id = \(bind: account.id) OR subject_hash = \(bind: account.subjectHash)"
            ).all()
            guard taken.isEmpty else { return false }
            try await db.raw(
                """
                INSERT INTO accounts (\(unsafeRaw: Self.accountColumns)) VALUES (
                    \(bind: account.id), \(bind: account.subjectHash), \(bind: account.sealedSubject),
                    \(bind: account.sealedEmail), \(bind: account.isPrivateEmail ? 1 : 0),
                    \(bind: account.emailForwarding.rawValue), \(bind: account.sealedName), \(bind: account.clientID),
                    NULL, NULL, NULL, \(bind: account.appleCredential.rawValue), NULL, NULL,
                    \(bind: account.createdAt.milliseconds), \(bind: account.updatedAt.milliseconds), NULL, NULL, 1,
                    \(bind: account.emailHash))
                """
            ).run()
            try await db.raw(
                """
                INSERT INTO transfer_imports (account_id, client_id, state, attempts, last_error, updated_at)
                VALUES (\(bind: record.accountID), \(bind: record.clientID), \(bind: record.state.rawValue), \(bind: record.attempts),
                    \(bind: record.lastError), \(bind: record.updatedAt.milliseconds))
                ON CONFLICT (account_id) DO UPDATE SET client_id = EXCLUDED.client_id, state = EXCLUDED.state,
                    attempts = EXCLUDED.attempts, last_error = EXCLUDED.last_error, updated_at = EXCLUDED.updated_at
                """
            ).run()
            return true
        }
    }

    /// Sets an import's state while it is not `exchanged`; a failure counts an attempt.
    public func markImport(accountID: String, state: TransferState, lastError: String?, at: Date) async throws {
        let attempt = state == .imported ? 0 : 1
        try await database.withDatabase { db in
            try await db.raw(
                """
                UPDATE transfer_imports SET state = \(bind: state.rawValue), last_error = \(bind: lastError),
                    attempts = attempts + \(bind: attempt), updated_at = \(bind: at.milliseconds)
                WHERE account_id = \(bind: accountID) AND state IN ('imported', 'failed')
                """
            ).run()
        }
    }

    /// Re-keys a pending import's account and marks it `exchanged`, with its webhooks, in one transaction.
    public func completeImport(account: AccountRecord, completion: TransferCompletion) async throws -> Bool {
        try await keeper.changing(.accounts([account.id])) { sessions in
            let db = sessions.db
            // The account first, then its import row: the order a sign-in that completes an import takes too, so the
            // two never wait on each other's locks (PostgreSQL would abort one as a deadlock).
            let updated = try await db.raw(
                """
                UPDATE accounts SET subject_hash = \(bind: account.subjectHash), sealed_subject = \(bind: account.sealedSubject),
                    sealed_email = \(bind: account.sealedEmail), email_hash = \(bind: account.emailHash),
                    is_private_email = \(bind: account.isPrivateEmail ? 1 : 0), updated_at = \(bind: account.updatedAt.milliseconds)
                WHERE id = \(bind: account.id) AND EXISTS (
                    SELECT 1 FROM transfer_imports t WHERE t.account_id = accounts.id AND t.state IN ('imported', 'failed'))
                RETURNING id
                """
            ).all()
            guard !updated.isEmpty else { return false }
            return try await Self.markExchanged(accountID: account.id, completion: completion, on: db)
        }
    }

    /// The account of a pending import found by its transfer identifier's hash.
    public func pendingImport(subjectHashes: [String]) async throws -> AccountRecord? {
        guard !subjectHashes.isEmpty else { return nil }
        return try await database.read(
            """
            SELECT \(unsafeRaw: Self.qualifiedAccountColumns) FROM accounts a
            JOIN transfer_imports t ON t.account_id = a.id
            WHERE a.subject_hash IN (\(binds: subjectHashes)) AND t.state IN ('imported', 'failed')
            """
        ).first.map(Self.account(from:))
    }

    /// A page of the accounts of `clientIDs`, by id.
    public func accounts(clientIDs: Set<String>, afterID: String?, limit: Int) async throws -> [AccountRecord] {
        guard !clientIDs.isEmpty else { return [] }
        return try await database.read(
            """
            SELECT \(unsafeRaw: Self.accountColumns) FROM accounts
            WHERE client_id IN (\(binds: clientIDs.sorted())) AND id > \(bind: afterID ?? "")
            ORDER BY id LIMIT \(bind: limit)
            """
        ).map(Self.account(from:))
    }

    /// How many accounts `clientIDs` have.
    public func accountCount(clientIDs: Set<String>) async throws -> Int {
        guard !clientIDs.isEmpty else { return 0 }
        let row = try await database.read("SELECT COUNT(*) AS n FROM accounts WHERE client_id IN (\(binds: clientIDs.sorted()))").first
        return try row?.decode(column: "n", as: Int.self) ?? 0
    }

    /// Rows of `side` by state.
    public func transferCounts(side: TransferSide) async throws -> [TransferState: Int] {
        var counts: [TransferState: Int] = [:]
        for row in try await database.read("SELECT state, COUNT(*) AS n FROM \(unsafeRaw: Self.table(side)) GROUP BY state") {
            guard let state = TransferState(rawValue: try row.string("state")) else { continue }
            counts[state] = try row.decode(column: "n", as: Int.self)
        }
        return counts
    }

    /// Marks a pending import `exchanged` and queues its webhooks (inside the caller's transaction); `false` when it was
    /// not pending (already exchanged, or never imported).
    static func markExchanged(accountID: String, completion: TransferCompletion, on db: any SQLDatabase) async throws -> Bool {
        let marked = try await db.raw(
            """
            UPDATE transfer_imports SET state = 'exchanged', last_error = NULL, updated_at = \(bind: completion.at.milliseconds)
            WHERE account_id = \(bind: accountID) AND state IN ('imported', 'failed')
            RETURNING account_id
            """
        ).all()
        guard !marked.isEmpty else { return false }
        for delivery in completion.webhooks {
            try await insertWebhook(delivery, on: db)
        }
        try await insertEvents(completion.history, on: db)
        return true
    }

    private static func table(_ side: TransferSide) -> String {
        side == .export ? "transfer_exports" : "transfer_imports"
    }

    private static func transferColumns(_ side: TransferSide) -> String {
        let common = "account_id, client_id, state, attempts, last_error, updated_at"
        return side == .export ? common + ", target_team, sealed_transfer_sub" : common
    }

    private static func transfer(from row: any SQLRow, side: TransferSide) throws -> TransferRecord {
        TransferRecord(
            accountID: try row.string("account_id"),
            clientID: try row.string("client_id"),
            targetTeam: side == .export ? try row.string("target_team") : nil,
            state: TransferState(rawValue: try row.string("state")) ?? .failed,
            sealedTransferSub: side == .export ? try row.optionalString("sealed_transfer_sub") : nil,
            attempts: try row.decode(column: "attempts", as: Int.self),
            lastError: try row.optionalString("last_error"),
            updatedAt: try row.date("updated_at") ?? Date(timeIntervalSince1970: 0)
        )
    }
}
