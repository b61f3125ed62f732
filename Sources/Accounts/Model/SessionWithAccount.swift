/// A session with the shown fields of its account, as one read finds them: the one read model of a session.
public struct SessionWithAccount: Sendable, Equatable {
    /// The session.
    public var session: SessionRecord
    /// Its account's shown fields; `nil` when the account was deleted.
    public var account: SealedAccountView?

    /// Creates the record.
    public init(session: SessionRecord, account: SealedAccountView?) {
        self.session = session
        self.account = account
    }
}
