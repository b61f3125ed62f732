import Synchronization

/// A session with the shown fields of its account, as one read finds them: the one read model of a session.
///
/// Its copies share one storage: the session memory hands the same remembered session to every check, on every event
/// loop, and copying its fields (a dozen strings, each retained and released from both loops) showed in serve's
/// profile under the session check (Benchmarks/README, A21). Its fields are read in place (`_read`: reading
/// `found.session.expiresAt` copies no string); a change of a field makes the copy its own storage.
public struct SessionWithAccount: Sendable, Equatable {
    private final class Storage: Sendable {
        let session: SessionRecord
        let account: SealedAccountView?
        let memo: SessionMemo?

        init(session: SessionRecord, account: SealedAccountView?, memo: SessionMemo?) {
            self.session = session
            self.account = account
            self.memo = memo
        }
    }

    private var storage: Storage

    /// The session.
    public var session: SessionRecord {
        _read { yield storage.session }
        set { storage = Storage(session: newValue, account: account, memo: memo) }
    }

    /// Its account's shown fields; `nil` when the account was deleted.
    public var account: SealedAccountView? {
        _read { yield storage.account }
        set { storage = Storage(session: session, account: newValue, memo: memo) }
    }

    /// Beside a session the session memory remembers: what the layers above derived from it; `nil` for a read from the
    /// database.
    public var memo: SessionMemo? {
        _read { yield storage.memo }
        set { storage = Storage(session: session, account: account, memo: newValue) }
    }

    /// Creates the record.
    public init(session: SessionRecord, account: SealedAccountView?, memo: SessionMemo? = nil) {
        storage = Storage(session: session, account: account, memo: memo)
    }

    /// The same session and account as they were read; the memo is not part of what was read.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.storage === rhs.storage || (lhs.session == rhs.session && lhs.account == rhs.account)
    }
}

/// What the layers above derive from a session the session memory remembers (its opened fields, its rendered answer),
/// kept beside the memory's entry: it lives and goes with that entry, so whatever drops the entry (a change that ends
/// the session or changes what its check shows, a lapsed lease, the entry's lifetime) drops this too. It is not a
/// second cache with rules of its own: it answers only through the entry it belongs to.
public final class SessionMemo: Sendable {
    private let kept = Mutex<[ObjectIdentifier: any Sendable]>([:])

    /// An empty memo, for a new entry of the memory.
    public init() {}

    /// What was kept of type `T`, if anything.
    public func value<T: Sendable>(of type: T.Type) -> T? {
        kept.withLock { $0[ObjectIdentifier(type)] as? T }
    }

    /// Keeps `value`, in place of what was kept of its type. It must be derived from the entry alone (never hold this
    /// memo, which would keep it alive in a cycle).
    public func keep<T: Sendable>(_ value: T) {
        kept.withLock { $0[ObjectIdentifier(T.self)] = value }
    }
}
