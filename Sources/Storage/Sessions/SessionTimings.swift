/// The lifetimes and waits of the session memory and the replicas' protocol (docs/replicas-postgresql.md). The
/// defaults are the contract's; tests may shorten them, and drive them with a ``MonotonicClock`` of their own.
public struct SessionTimings: Sendable {
    /// How long a remembered session answers before the database is asked again: an account's shown fields may lag by
    /// this much on another replica (its sessions' ends never do). SQLite's one process sees every change it makes.
    public var entryLifetime: Duration
    /// How long a heard announcement keeps its sessions out of memory when no outcome arrives.
    public var markLifetime: Duration = .seconds(5)
    /// How long a replica's registration is current after a renewal.
    public var lease: Duration = .seconds(2)
    /// How often a registration is renewed.
    public var renewEvery: Duration = .milliseconds(500)
    /// How long after (re)starting to listen a replica answers nothing from memory: an announcement made before it
    /// listened resolves within ``markLifetime``.
    public var warmUp: Duration = .milliseconds(5_500)
    /// A change must commit within this of its announcement, or it rolls back and is announced again; one whose commit
    /// returns later than this is announced again, and acknowledged, before it is answered.
    public var commitWithin: Duration = .milliseconds(4_500)
    /// How long a change waits for acknowledgements before it announces itself again.
    public var ackWait: Duration = .seconds(4)
    /// How often a waiting change looks again at which replicas' leases are still current.
    public var ackRecheck: Duration = .milliseconds(200)
    /// How long a replica waits to hear its own `NOTIFY` on its listener before it says that the listener hears nothing.
    public var selfTest: Duration = .seconds(2)
    /// How long the listener waits before it connects again after a failure.
    public var reconnectDelay: Duration = .milliseconds(500)
    /// How long a listener that does not hear its own `NOTIFY` (a transaction-pooling proxy in the way) waits before it
    /// connects and tries again; checks are answered from the database meanwhile.
    public var deafRetry: Duration = .seconds(60)
    /// How long a change that ends sessions may take as a whole (three rounds of announcement and commit, and room):
    /// past it, it is cancelled and fails as unavailable, so that its request is answered however a connection hangs.
    public var changeLimit: Duration = .seconds(15)

    /// The contract's timings, with `entryLifetime` for the backend.
    public init(entryLifetime: Duration) {
        self.entryLifetime = entryLifetime
    }

    /// PostgreSQL's: entries answer for one second, so another replica's change of an account's fields shows within it.
    public static let replicas = SessionTimings(entryLifetime: .seconds(1))
    /// SQLite's: one process sees every change, and another process's through the database's change counter
    /// (``SessionKeeper``); entries are refreshed once a minute all the same.
    public static let singleProcess = SessionTimings(entryLifetime: .seconds(60))
}
