public import AppleID
public import Foundation

/// One atomic change to an account, with everything it leaves behind, written in one transaction.
public struct AccountChange: Sendable {
    /// What happens to the account.
    public enum Action: Sendable {
        /// The account and its personal data go; its sessions end (`account_deleted`); the audit record is written;
        /// with a plan, the token the deletion itself removed (refresh token, else access token) moves into the
        /// revocation outbox, so that a sign-in that stored a newer token a moment before has that one revoked.
        case delete(audit: AuditRecord, revocation: RevocationPlan?)
        /// Apple's email forwarding changed.
        case setEmailForwarding(EmailForwarding)
        /// Apple's grant is gone: sessions end (`apple_credential_revoked`) and the credential is `revoked`.
        case revokeCredential
    }

    /// The account.
    public var accountID: String
    /// The change.
    public var action: Action
    /// Webhooks the change sends.
    public var webhooks: [WebhookDelivery]
    /// The account's history events the change records (none for a deletion, which removes the history).
    public var history: [HistoryEvent] = []
    /// The notification this change processes, marked processed in the same transaction.
    public var completesNotification: String?
    /// What the account must still be when the change commits; `nil`: any state.
    public var condition: ChangeCondition?
    /// When.
    public var at: Date
}

/// What an account must still be when a change decided on an earlier read commits, checked in the change's own
/// statement, so that the change never acts on a newer state than the one it was decided on.
public enum ChangeCondition: Sendable, Equatable {
    /// Its latest grant (the last code exchange, else its creation) is no later than this instant: a notification
    /// about an earlier grant never ends a newer one.
    case grantedNoLaterThan(Date)
    /// It still holds this sealed refresh token (`nil`: none): a validation's verdict is about the token it validated.
    case refreshToken(String?)
}

/// What became of an ``AccountChange``.
public enum AccountChangeOutcome: Sendable, Equatable {
    /// Committed, with the revocation a deletion put into the outbox (none when it removed no token, or was planned
    /// without one).
    case applied(revocation: RevocationJob?)
    /// No such account: nothing written.
    case gone
    /// The account no longer meets the change's ``ChangeCondition``: nothing written.
    case superseded
}

/// The tokens a deletion removed with the account row, as stored (sealed under the account's contexts).
public struct RemovedTokens: Sendable {
    /// The account's id.
    public var accountID: String
    /// The client id the tokens were issued to.
    public var clientID: String
    /// The refresh token, sealed.
    public var sealedRefreshToken: String?
    /// The access token, sealed.
    public var sealedAccessToken: String?

    /// Creates the record.
    public init(accountID: String, clientID: String, sealedRefreshToken: String?, sealedAccessToken: String?) {
        self.accountID = accountID
        self.clientID = clientID
        self.sealedRefreshToken = sealedRefreshToken
        self.sealedAccessToken = sealedAccessToken
    }
}

/// How a deletion's revocation row is made from the tokens the deletion removed, inside its transaction.
public struct RevocationPlan: Sendable {
    /// The row's id (also its sealing context).
    public var id: String
    /// The lease the deleting request holds on the row while it waits for Apple.
    public var leaseUntil: Date
    /// When the deletion happened.
    public var createdAt: Date
    /// Re-seals the token to revoke (the refresh token, else the access token) under the row's context; `nil` when the
    /// deletion removed neither.
    public var reseal: @Sendable (RemovedTokens) throws -> (sealedToken: String, hint: TokenTypeHint)?

    /// The outbox row for `removed`, or `nil` when there is no token to revoke.
    public func job(for removed: RemovedTokens) throws -> RevocationJob? {
        guard let (sealedToken, hint) = try reseal(removed) else { return nil }
        return RevocationJob(
            id: id,
            clientID: removed.clientID,
            sealedToken: sealedToken,
            hint: hint,
            attempts: 0,
            nextAttemptAt: leaseUntil,
            leaseUntil: leaseUntil,
            lastError: nil,
            createdAt: createdAt,
            accountID: removed.accountID
        )
    }
}
