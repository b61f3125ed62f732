import Foundation

/// What a sign-in writes, in one transaction: the account created or updated, its new session and history events, and
/// what a transfer it completes leaves behind.
public struct SignInRecord: Sendable {
    /// The account as the sign-in leaves it.
    public var account: AccountRecord
    /// Whether the account is created (else updated).
    public var isNew: Bool
    /// The new session.
    public var session: SessionRecord
    /// The history events the sign-in records.
    public var history: [HistoryEvent] = []
    /// The grant Apple gave this sign-in, put into the revocation outbox instead of anything else when the account to
    /// update was deleted meanwhile.
    public var revocationIfGone: RevocationJob?
    /// The account's pending import, marked `exchanged` with its webhooks queued when it is still pending (a sign-in
    /// whose identity token carried the transfer identifier).
    public var completesTransfer: TransferCompletion?
}
