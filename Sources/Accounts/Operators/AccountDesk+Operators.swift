import AppleID
import Foundation

/// What an operator does to one account, through the same operations as the user's own routes.
extension AccountDesk {
    /// Ends every live session of the account, as an operator: each is refused on every replica at its next request
    /// (`session_revoked`, reason `signed_out`) and leaves a `signed_out` event with reason `operator`.
    ///
    /// - Throws: `not_found` when there is no account with that id.
    public func endAllSessions(accountID: String) async throws(AccountsError) -> Int {
        guard try await storing({ try await store.account(id: accountID) }) != nil else {
            throw AccountsError(.notFound, "no account with that id")
        }
        return try await storing {
            try await store.endOtherSessions(accountID: accountID, keepingTokenHash: nil, reason: .signedOut, cause: .operator, at: clock.now())
        }
    }

    /// The account's live sessions, newest first, none of them current.
    public func sessions(accountID: String) async throws(AccountsError) -> [DeviceSession] {
        try await deviceSessions(accountID: accountID, currentTokenHash: nil)
    }
}
