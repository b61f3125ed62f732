import Accounts
import Synchronization

/// Which sessions a change is about to end: some sessions by their token hashes, or every session of some accounts.
public enum SessionEndTarget: Sendable, Equatable {
    /// These sessions.
    case sessions([String])
    /// Every session of these accounts.
    case accounts([String])
}

/// One replica's memory of the sessions it checked recently, and of the changes it was told are about to end some.
///
/// It answers only while it may (``renewed(sentAt:lease:warmUp:)``: its registration's lease is current and it has listened
/// long enough to have heard of every change that may still commit), never for a session a change it heard of is
/// ending (until that change is resolved or 5 seconds have passed), and never with an entry older than
/// ``entryLifetime`` (an account's shown fields may lag by that much; its sessions' ends never do). A read from the
/// database is kept only if no change was heard while it ran (``epoch``), so a read that began before a change's
/// announcement cannot bring back what the announcement dropped. See docs/replicas-postgresql.md.
final class SessionMemory: Sendable {
    /// How long an entry answers before the database is asked again.
    static let entryLifetime: Duration = .seconds(1)
    /// How long a heard announcement blocks its sessions when no outcome arrives: a change commits within this of its
    /// announcement or rolls back.
    static let markLifetime: Duration = .seconds(5)

    private struct Entry {
        var value: SessionWithAccount
        var storedAt: ContinuousClock.Instant
    }

    private struct Mark {
        var target: SessionEndTarget
        var until: ContinuousClock.Instant
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var marks: [String: Mark] = [:]
        var epoch = 0
        /// Until when the registration's lease lets this memory answer.
        var leaseUntil: ContinuousClock.Instant?
        /// Before this, the replica may have missed an announcement that is still to commit.
        var warmFrom: ContinuousClock.Instant?
        /// When the last renewal that returned was sent.
        var lastRenewal: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    /// Entries kept at most.
    let capacity: Int

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// A remembered live session, or `nil` when the database must answer.
    func lookup(_ tokenHash: String, now: ContinuousClock.Instant = .now) -> SessionWithAccount? {
        state.withLock { state in
            guard Self.mayAnswer(state, now: now), let entry = state.entries[tokenHash] else { return nil }
            guard now - entry.storedAt < Self.entryLifetime else {
                state.entries[tokenHash] = nil
                return nil
            }
            return entry.value
        }
    }

    /// The epoch to pass to ``remember(_:_:readAt:now:)`` for a read that starts now.
    var epoch: Int { state.withLock { $0.epoch } }

    /// Keeps a session read from the database since `epoch`, if it is live and nothing was heard meanwhile.
    func remember(_ tokenHash: String, _ value: SessionWithAccount, readAt epoch: Int, now: ContinuousClock.Instant = .now) {
        guard value.session.endedAt == nil, let account = value.account else { return }
        state.withLock { state in
            guard state.epoch == epoch, Self.mayAnswer(state, now: now) else { return }
            for mark in state.marks.values where mark.until > now && Self.covers(mark.target, tokenHash, account.id) {
                return
            }
            if state.entries.count >= capacity { Self.evict(&state, now: now, capacity: capacity) }
            state.entries[tokenHash] = Entry(value: value, storedAt: now)
        }
    }

    /// A change is about to end `target`'s sessions: drops them and keeps them from being remembered until
    /// ``resolve(_:)`` or ``markLifetime``. Returns how many entries it dropped.
    @discardableResult
    func mark(_ change: String, _ target: SessionEndTarget, now: ContinuousClock.Instant = .now) -> Int {
        state.withLock { state in
            state.epoch += 1
            state.marks = state.marks.filter { $0.value.until > now }
            state.marks[change] = Mark(target: target, until: now + Self.markLifetime)
            return Self.drop(target, from: &state)
        }
    }

    /// The change committed or rolled back.
    func resolve(_ change: String) {
        state.withLock { state in
            state.epoch += 1
            state.marks[change] = nil
        }
    }

    /// Forgets what is remembered of `accountID`'s sessions (its shown fields changed here).
    func forget(account accountID: String) {
        state.withLock { state in
            state.epoch += 1
            _ = Self.drop(.accounts([accountID]), from: &state)
        }
    }

    /// A renewal of the registration sent at `sentAt` returned: the memory may answer until `sentAt + lease`. When the
    /// lease had lapsed before (or there was none), announcements may have gone unheard meanwhile: the memory forgets
    /// everything and answers nothing for `warmUp`.
    func renewed(sentAt: ContinuousClock.Instant, lease: Duration, warmUp: Duration) {
        state.withLock { state in
            if state.leaseUntil.map({ sentAt >= $0 }) ?? true {
                state.epoch += 1
                state.entries.removeAll(keepingCapacity: true)
                state.warmFrom = sentAt + warmUp
            }
            state.leaseUntil = sentAt + lease
            state.lastRenewal = sentAt
        }
    }

    /// When the last renewal that returned was sent.
    var lastRenewal: ContinuousClock.Instant? { state.withLock { $0.lastRenewal } }

    /// The listener is gone: forget everything and answer nothing until a new permit.
    func revoke() {
        state.withLock { state in
            state.epoch += 1
            state.entries.removeAll(keepingCapacity: true)
            state.marks.removeAll()
            state.leaseUntil = nil
            state.warmFrom = nil
            state.lastRenewal = nil
        }
    }

    /// How many sessions are remembered.
    var count: Int { state.withLock { $0.entries.count } }

    private static func mayAnswer(_ state: State, now: ContinuousClock.Instant) -> Bool {
        guard let leaseUntil = state.leaseUntil, let warmFrom = state.warmFrom else { return false }
        return now < leaseUntil && now >= warmFrom
    }

    private static func covers(_ target: SessionEndTarget, _ tokenHash: String, _ accountID: String) -> Bool {
        switch target {
        case .sessions(let hashes): hashes.contains(tokenHash)
        case .accounts(let ids): ids.contains(accountID)
        }
    }

    private static func drop(_ target: SessionEndTarget, from state: inout State) -> Int {
        switch target {
        case .sessions(let hashes):
            return hashes.reduce(0) { count, hash in count + (state.entries.removeValue(forKey: hash) == nil ? 0 : 1) }
        case .accounts(let ids):
            let before = state.entries.count
            let accounts = Set(ids)
            state.entries = state.entries.filter { !accounts.contains($0.value.value.session.accountID) }
            return before - state.entries.count
        }
    }

    /// Makes room: entries past their lifetime go, then the oldest tenth.
    private static func evict(_ state: inout State, now: ContinuousClock.Instant, capacity: Int) {
        state.entries = state.entries.filter { now - $0.value.storedAt < entryLifetime }
        guard state.entries.count >= capacity else { return }
        let oldest = state.entries.sorted { $0.value.storedAt < $1.value.storedAt }.prefix(max(1, capacity / 10))
        for (hash, _) in oldest { state.entries[hash] = nil }
    }
}
