import AppleID
import Foundation
public import Logging

/// App transfer (TN3159), both sides: the sending team asks Apple for each user's transfer identifier and writes the
/// file; the receiving team creates each account with its id, keyed by the identifier, and exchanges it at Apple for
/// its own subject. Each account's state is kept (``TransferStore``), so every run does only what is left.
public struct AppTransfer: Sendable {
    let store: any TransferStore
    let accounts: any AccountLookup
    let apple: any AppleGateway
    let vault: TokenVault
    let clock: any WallClock
    let webhooks: WebhookFanout
    let wakeups: JobWakeups
    /// Accounts read per page on the sending side.
    let pageSize = 500

    private var sealing: AccountSealing { AccountSealing(vault: vault) }

    // MARK: Sending side

    /// App transfer, sending side: asks Apple for the transfer identifier of each account of `clientIDs` for the team
    /// `target`, and records each account's state (`exported` with the identifier sealed, `revoked_before_transfer`,
    /// `failed`). Accounts already `exported` to `target` or `revoked_before_transfer` are not asked for again. The
    /// accounts are read a page at a time.
    ///
    /// - Parameters:
    ///   - progress: Called after each account with (done, total).
    /// - Returns: The counts, and the file's lines (every account of `clientIDs` exported to `target`).
    /// - Throws: `apple_client_rejected` when Apple refuses the team's credentials (nothing more is tried).
    public func export(
        target: String,
        clientIDs: Set<String>,
        logger: Logger,
        progress: (Int, Int) -> Void = { _, _ in }
    ) async throws(AccountsError) -> TransferOutcome {
        let total = try await storing { try await store.accountCount(clientIDs: clientIDs) }
        var outcome = TransferOutcome()
        var done = 0
        var after: String?
        while true {
            let page = try await storing { try await store.accounts(clientIDs: clientIDs, afterID: after, limit: pageSize) }
            for account in page {
                let record = try await exportOne(account, target: target, logger: logger)
                outcome.counts[record.state, default: 0] += 1
                if record.state == .exported, let sealed = record.sealedTransferSub {
                    outcome.lines.append(try await exportLine(account, sealedTransferSub: sealed))
                }
                done += 1
                progress(done, max(total, done))
            }
            guard page.count == pageSize, let last = page.last else { break }
            after = last.id
        }
        return outcome
    }

    /// Exports one account unless it is done; returns its row as it now stands.
    private func exportOne(_ account: AccountRecord, target: String, logger: Logger) async throws(AccountsError) -> TransferRecord {
        let existing = try await storing { try await store.transfer(side: .export, accountID: account.id) }
        if let existing, existing.targetTeam == target, existing.state == .exported || existing.state == .revokedBeforeTransfer {
            return existing
        }
        var record = TransferRecord(
            accountID: account.id,
            clientID: account.clientID,
            targetTeam: target,
            state: .failed,
            sealedTransferSub: nil,
            attempts: (existing?.attempts ?? 0) + 1,
            lastError: nil,
            updatedAt: clock.now()
        )
        do {
            let subject = try vault.open(account.sealedSubject, context: SealingContext.account(account.id, .subject))
            let transferSub = try await apple.transferSub(for: subject, target: target, clientID: account.clientID)
            record.state = .exported
            record.sealedTransferSub = try vault.seal(transferSub.value, context: SealingContext.account(account.id, .transferSub))
        } catch {
            record.state = try Self.refusal(error, logger: logger)
            record.lastError = AccountsError.fromApple(error).reason
        }
        try await storing { try await store.recordExport(record) }
        return record
    }

    /// The file line of an exported account, from the row its export left.
    private func exportLine(_ account: AccountRecord, sealedTransferSub: String) async throws(AccountsError) -> TransferLine {
        let transferSub = try await storing { try vault.open(sealedTransferSub, context: SealingContext.account(account.id, .transferSub)) }
        let name = try sealing.view(of: account.sealedView).name
        return TransferLine(accountID: account.id, clientID: account.clientID, transferSub: transferSub.value, name: name)
    }

    // MARK: Receiving side

    /// App transfer, receiving side: creates each account of `lines` with its id, keyed by its transfer identifier, then
    /// exchanges the identifier at Apple for this team's subject (and private relay address), re-keys the account,
    /// and sends `account.transferred`. Accounts already `exchanged` or `revoked_before_transfer` are left alone; the
    /// others are tried again.
    ///
    /// - Parameters:
    ///   - progress: Called after each line with (done, total).
    /// - Returns: The counts of the file's accounts by state, and how many this run created.
    /// - Throws: `apple_client_rejected` when Apple refuses the team's credentials (nothing more is tried).
    public func `import`(
        _ lines: [TransferLine],
        logger: Logger,
        progress: (Int, Int) -> Void = { _, _ in }
    ) async throws(AccountsError) -> TransferOutcome {
        var outcome = TransferOutcome()
        for (index, line) in lines.enumerated() {
            defer { progress(index + 1, lines.count) }
            let state = try await importOne(line, outcome: &outcome, logger: logger)
            outcome.counts[state, default: 0] += 1
        }
        return outcome
    }

    /// Imports one line (creating its account when new) and exchanges it unless it is done; returns its state.
    private func importOne(_ line: TransferLine, outcome: inout TransferOutcome, logger: Logger) async throws(AccountsError) -> TransferState {
        let now = clock.now()
        if let existing = try await storing({ try await store.transfer(side: .import, accountID: line.accountID) }) {
            if existing.state == .exchanged || existing.state == .revokedBeforeTransfer { return existing.state }
            if existing.state == .deleted {
                logger.info("account deleted since its import: not imported again", metadata: ["account.id": "\(line.accountID)"])
                return .deleted
            }
        } else {
            let record = TransferRecord(
                accountID: line.accountID,
                clientID: line.clientID,
                targetTeam: nil,
                state: .imported,
                sealedTransferSub: nil,
                attempts: 0,
                lastError: nil,
                updatedAt: now
            )
            let account = try await storing { try importedAccount(line, now: now) }
            guard try await storing({ try await store.insertImport(account: account, record: record) }) else {
                logger.warning(
                    "an account with this id, or with this transfer identifier, exists here already: line skipped",
                    metadata: ["account.id": "\(line.accountID)"]
                )
                return .failed
            }
            outcome.imported += 1
        }
        return try await exchange(Redacted(line.transferSub), accountID: line.accountID, clientID: line.clientID, logger: logger)
    }

    /// A new account as the file describes it: keyed by the transfer identifier, no email or tokens yet.
    private func importedAccount(_ line: TransferLine, now: Date) throws -> AccountRecord {
        var record = try sealing.newAccount(id: line.accountID, subject: Redacted(line.transferSub), clientID: line.clientID, at: now)
        record.sealedName = try line.name.map { try sealing.sealName($0, accountID: line.accountID) }
        return record
    }

    /// Exchanges a pending import's transfer identifier at Apple and completes it; returns its state afterwards.
    private func exchange(
        _ transferSub: Redacted<String>,
        accountID: String,
        clientID: String,
        logger: Logger
    ) async throws(AccountsError) -> TransferState {
        let exchanged: AppleTransferExchange
        do {
            exchanged = try await apple.exchangeTransferSub(transferSub, clientID: clientID)
        } catch {
            let state = try Self.refusal(error, logger: logger)
            // Apple out of reach leaves the import pending; a refusal marks it failed (or revoked before the transfer).
            let mapped = AccountsError.fromApple(error)
            let kept: TransferState = mapped.code == .appleUnavailable ? .imported : state
            try await storing { try await store.markImport(accountID: accountID, state: kept, lastError: mapped.reason, at: clock.now()) }
            return kept
        }
        return try await storing {
            guard var account = try await store.account(id: accountID) else { return .failed }
            let now = clock.now()
            // The user signed in under the new team before the import created this account: the sign-in made another
            // account, which holds the new subject now. Left for the operator (the two are not merged).
            if let other = try await accounts.account(subjectHashes: vault.subjectHashCandidates(exchanged.sub)), other.id != accountID {
                let reason = "another account (\(other.id)) already has this user's new subject: they signed in before the import"
                logger.warning("transfer not completed", metadata: ["account.id": "\(accountID)", "error.reason": "\(reason)"])
                try await store.markImport(accountID: accountID, state: .failed, lastError: reason, at: now)
                return .failed
            }
            account.subjectHash = vault.subjectHash(exchanged.sub)
            account.sealedSubject = try vault.seal(exchanged.sub.value, context: SealingContext.account(accountID, .subject))
            if let email = exchanged.email {
                try account.setEmail(email.value, vault: vault)
                account.isPrivateEmail = exchanged.isPrivateEmail ?? true
            }
            account.updatedAt = now
            let completed = try await store.completeImport(account: account, completion: completion(accountID: accountID, at: now))
            if completed { wakeups.notify(.webhooks) }
            // Not completed: a sign-in completed it meanwhile.
            return .exchanged
        }
    }

    /// The completion of a pending import: `account.transferred` to every webhook URL.
    func completion(accountID: String, at now: Date) -> TransferCompletion {
        TransferCompletion(
            webhooks: webhooks.deliveries(.transferred, accountID: accountID, at: now),
            history: [.transferred(accountID: accountID, at: now)],
            at: now
        )
    }

    /// The state Apple's refusal of a transfer call leaves an account in: `invalid_request` means the user had stopped
    /// using Sign in with Apple with the app; anything else is `failed`.
    /// - Throws: `apple_client_rejected` when Apple refused the team's own credentials (`invalid_client`,
    ///   `unauthorized_client`): every other account would fail the same way.
    static func refusal(_ error: any Error, logger: Logger) throws(AccountsError) -> TransferState {
        let apple = error as? AppleIDError
        if apple?.appleErrorCode == .invalidRequest { return .revokedBeforeTransfer }
        if apple?.appleErrorCode == .invalidClient || apple?.appleErrorCode == .unauthorizedClient || apple?.code == .invalidConfiguration {
            let reason = apple?.reason ?? "Apple refused the client"
            logger.critical(
                "Apple refused the team's client credentials: check the team's key and that the client id belongs to it",
                metadata: ["error.reason": "\(reason)"]
            )
            throw AccountsError(.appleClientRejected, reason)
        }
        return .failed
    }

    // MARK: Status

    /// How many accounts of each side are in each state.
    public func counts(side: TransferSide) async throws(AccountsError) -> [TransferState: Int] {
        try await storing { try await store.transferCounts(side: side) }
    }
}
