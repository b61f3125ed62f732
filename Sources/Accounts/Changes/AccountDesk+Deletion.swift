public import Logging

extension AccountDesk {
    /// Deletes the account behind a session (`DELETE /v1/account`).
    public func deleteAccount(sessionToken: String, logger: Logger) async throws(AccountsError) -> DeletionResult {
        let (_, account) = try await liveSession(token: sessionToken)
        return try await delete(accountID: account.id, sealedSubject: account.sealedSubject, reason: .userRequest, logger: logger)
    }

    /// Deletes an account by id (`orchard accounts delete`).
    public func deleteAccount(id: String, reason: DeletionReason, logger: Logger) async throws(AccountsError) -> DeletionResult {
        guard let record = try await storing({ try await store.account(id: id) }) else {
            throw AccountsError(.notFound, "no account with that id")
        }
        return try await delete(accountID: record.id, sealedSubject: record.sealedSubject, reason: reason, logger: logger)
    }

    /// A deletion asked for by the user or an operator: it revokes at Apple, whatever the account has become since it
    /// was read.
    private func delete(
        accountID: String,
        sealedSubject: String,
        reason: DeletionReason,
        logger: Logger
    ) async throws(AccountsError) -> DeletionResult {
        let outcome = try await changes.delete(
            accountID: accountID,
            sealedSubject: sealedSubject,
            reason: reason,
            revoke: true,
            completesNotification: nil,
            condition: nil,
            logger: logger
        )
        switch outcome {
        case .deleted(let result): return result
        case .gone, .superseded: throw AccountsError(.sessionInvalid, "the account was already deleted")
        }
    }
}
