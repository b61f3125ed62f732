import AppleID
import Foundation
public import Logging

/// One line of a transfer file: what the sending team hands the receiving one for an account. Never the subject or the
/// email.
public struct TransferLine: Codable, Sendable, Equatable {
    /// Orchard's account id, kept through the move.
    public var accountID: String
    /// The app's client id (it moves to the receiving team with the app).
    public var clientID: String
    /// Apple's transfer identifier for the user.
    public var transferSub: String
    /// The name from the user's first authorization, if any.
    public var name: AccountView.Name?

    /// Creates a line.
    public init(accountID: String, clientID: String, transferSub: String, name: AccountView.Name?) {
        self.accountID = accountID
        self.clientID = clientID
        self.transferSub = transferSub
        self.name = name
    }

    private enum CodingKeys: String, CodingKey {
        case name
        case accountID = "account_id"
        case clientID = "client_id"
        case transferSub = "transfer_sub"
    }

    /// Whether an account id can be taken as it is: letters, digits, `_` and `-`, at most 128 characters.
    public static func isValidAccountID(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 128
            && id.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || $0 == "_" || $0 == "-" }
    }
}

/// What one run of `transfer export` or `transfer import` ended with: the accounts it covered, by state.
public struct TransferOutcome: Sendable, Equatable {
    /// Accounts by state.
    public var counts: [TransferState: Int] = [:]
    /// Accounts created by this run (receiving side).
    public var imported = 0
    /// The sending side's lines, for the file (sending side).
    public var lines: [TransferLine] = []

    /// Creates an empty outcome.
    public init() {}

    /// The count of one state.
    public subscript(state: TransferState) -> Int { counts[state] ?? 0 }
}

extension Accounts {
    // MARK: Sending side

    /// App transfer, sending side: asks Apple for the transfer identifier of each account of `clientIDs` for the team
    /// `target`, and records each account's state (`exported` with the identifier sealed, `revoked_before_transfer`,
    /// `failed`). Accounts already `exported` to `target` or `revoked_before_transfer` are not asked for again.
    ///
    /// - Parameters:
    ///   - progress: Called after each account with (done, total).
    /// - Returns: The counts, and the file's lines (every account of `clientIDs` exported to `target`).
    /// - Throws: `apple_client_rejected` when Apple refuses the team's credentials (nothing more is tried).
    public func exportTransfers(
        target: String,
        clientIDs: Set<String>,
        logger: Logger,
        progress: (Int, Int) -> Void = { _, _ in }
    ) async throws(AccountsError) -> TransferOutcome {
        let accounts = try await allAccounts { clientIDs.contains($0.clientID) }
        var outcome = TransferOutcome()
        for (index, account) in accounts.enumerated() {
            defer { progress(index + 1, accounts.count) }
            let record = try await exportOne(account, target: target, logger: logger)
            outcome.counts[record.state, default: 0] += 1
            if record.state == .exported, let sealed = record.sealedTransferSub {
                outcome.lines.append(try exportLine(account, sealedTransferSub: sealed))
            }
        }
        return outcome
    }

    /// Exports one account unless it is done; returns its row as it now stands.
    private func exportOne(_ account: AccountRecord, target: String, logger: Logger) async throws(AccountsError) -> TransferRecord {
        let existing: TransferRecord?
        do {
            existing = try await store.transfer(side: .export, accountID: account.id)
        } catch {
            throw AccountsError.storage(error)
        }
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
            let subject = try vault.open(account.sealedSubject, context: Self.context(account.id, "subject"))
            let transferSub = try await apple.transferSub(for: subject, target: target, clientID: account.clientID)
            record.state = .exported
            record.sealedTransferSub = try vault.seal(transferSub.value, context: Self.context(account.id, "transfer_sub"))
        } catch {
            record.state = try transferRefusal(error, logger: logger)
            record.lastError = Self.mapApple(error).reason
        }
        do {
            try await store.recordExport(record)
        } catch {
            throw AccountsError.storage(error)
        }
        return record
    }

    /// The file line of an exported account, from the row its export left.
    private func exportLine(_ account: AccountRecord, sealedTransferSub: String) throws(AccountsError) -> TransferLine {
        do {
            let transferSub = try vault.open(sealedTransferSub, context: Self.context(account.id, "transfer_sub"))
            let name = try view(of: account).name
            return TransferLine(accountID: account.id, clientID: account.clientID, transferSub: transferSub.value, name: name)
        } catch let error as AccountsError {
            throw error
        } catch {
            throw AccountsError.storage(error)
        }
    }

    // MARK: Receiving side

    /// App transfer, receiving side: creates each account of `lines` with its id, keyed by its transfer identifier, then
    /// exchanges the identifier at Apple for this team's subject (and private relay address), re-keys the account,
    /// and sends `account.transferred`. Accounts already `exchanged` or `revoked_before_transfer` are left alone; the
    /// others are tried again.
    ///
    /// - Parameters:
    ///   - clientIDs: The client ids configured here; every line's must be one of them (the caller checks first).
    ///   - progress: Called after each line with (done, total).
    /// - Returns: The counts of the file's accounts by state, and how many this run created.
    /// - Throws: `apple_client_rejected` when Apple refuses the team's credentials (nothing more is tried).
    public func importTransfers(
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
        let transferSub = Redacted(line.transferSub)
        let now = clock.now()
        do {
            if let existing = try await store.transfer(side: .import, accountID: line.accountID) {
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
                guard try await store.insertImport(account: try importedAccount(line, now: now), record: record) else {
                    logger.warning(
                        "an account with this id, or with this transfer identifier, exists here already: line skipped",
                        metadata: ["account.id": "\(line.accountID)"]
                    )
                    return .failed
                }
                outcome.imported += 1
            }
        } catch let error as AccountsError {
            throw error
        } catch {
            throw AccountsError.storage(error)
        }
        return try await exchange(transferSub, accountID: line.accountID, clientID: line.clientID, logger: logger)
    }

    /// A new account as the file describes it: keyed by the transfer identifier, no email or tokens yet.
    private func importedAccount(_ line: TransferLine, now: Date) throws -> AccountRecord {
        var record = try newAccount(id: line.accountID, subject: Redacted(line.transferSub), clientID: line.clientID, at: now)
        record.sealedName = try line.name.map { try sealName($0, accountID: line.accountID) }
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
            let state = try transferRefusal(error, logger: logger)
            // Apple out of reach leaves the import pending; a refusal marks it failed (or revoked before the transfer).
            let kept: TransferState = Self.mapApple(error).code == .appleUnavailable ? .imported : state
            do {
                try await store.markImport(accountID: accountID, state: kept, lastError: Self.mapApple(error).reason, at: clock.now())
            } catch {
                throw AccountsError.storage(error)
            }
            return kept
        }
        do {
            guard var account = try await store.account(id: accountID) else { return .failed }
            let now = clock.now()
            // The user signed in under the new team before the import created this account: the sign-in made another
            // account, which holds the new subject now. Left for the operator (the two are not merged).
            if let other = try await store.account(subjectHashes: vault.subjectHashCandidates(exchanged.sub)), other.id != accountID {
                let reason = "another account (\(other.id)) already has this user's new subject: they signed in before the import"
                logger.warning("transfer not completed", metadata: ["account.id": "\(accountID)", "error.reason": "\(reason)"])
                try await store.markImport(accountID: accountID, state: .failed, lastError: reason, at: now)
                return .failed
            }
            account.subjectHash = vault.subjectHash(exchanged.sub)
            account.sealedSubject = try vault.seal(exchanged.sub.value, context: Self.context(accountID, "subject"))
            if let email = exchanged.email {
                account.sealedEmail = try vault.seal(email.value, context: Self.context(accountID, "email"))
                account.isPrivateEmail = exchanged.isPrivateEmail ?? true
            }
            account.updatedAt = now
            let completed = try await store.completeImport(account: account, completion: transferCompletion(accountID: accountID, at: now))
            if completed { wakeups.notify(.webhooks) }
            // Not completed: a sign-in completed it meanwhile.
            return .exchanged
        } catch let error as AccountsError {
            throw error
        } catch {
            throw AccountsError.storage(error)
        }
    }

    /// The completion of a pending import: `account.transferred` to every webhook URL.
    func transferCompletion(accountID: String, at now: Date) -> TransferCompletion {
        let event = WebhookEvent(type: "account.transferred", id: randomID("evt_"), occurredAt: now, accountID: accountID)
        return TransferCompletion(webhooks: webhooks(for: event), at: now)
    }

    /// The state Apple's refusal of a transfer call leaves an account in: `invalid_request` means the user had stopped
    /// using Sign in with Apple with the app; anything else is `failed`.
    /// - Throws: `apple_client_rejected` when Apple refused the team's own credentials (`invalid_client`,
    ///   `unauthorized_client`): every other account would fail the same way.
    private func transferRefusal(_ error: any Error, logger: Logger) throws(AccountsError) -> TransferState {
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
    public func transferCounts(side: TransferSide) async throws(AccountsError) -> [TransferState: Int] {
        do {
            return try await store.transferCounts(side: side)
        } catch {
            throw AccountsError.storage(error)
        }
    }

    /// Every account that `include` accepts, by id.
    private func allAccounts(where include: (AccountRecord) -> Bool) async throws(AccountsError) -> [AccountRecord] {
        var all: [AccountRecord] = []
        var after: String?
        do {
            while true {
                let page = try await store.accounts(limit: 500, afterID: after)
                all += page.filter(include)
                guard page.count == 500, let last = page.last else { break }
                after = last.id
            }
        } catch {
            throw AccountsError.storage(error)
        }
        return all
    }
}
