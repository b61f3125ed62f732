import Accounts
import Foundation
import Synchronization

/// Which sessions a change affects: some sessions by their token hashes, or every session of some accounts.
public enum SessionEndTarget: Sendable, Equatable {
    /// These sessions.
    case sessions([String])
    /// Every session of these accounts.
    case accounts([String])
}

/// The sessions a process checked recently, and the changes it knows are about to end some: what is remembered,
/// marks, epochs and forgetting, for both backends. Only ``SessionKeeper`` holds one.
///
/// It answers only while it may (on PostgreSQL, while its registration's lease is current and it has listened long
/// enough to have heard of every change that may still commit: ``renewed(sentAt:)``; on SQLite, always), never for a
/// session a change it knows of is ending (until that change is resolved or ``SessionTimings/markLifetime`` has
/// passed), and never with an entry older than ``SessionTimings/entryLifetime``. A read from the database is kept only
/// if nothing was marked or forgotten while it ran (``epoch``), so a read that began before a change cannot bring back
/// what the change dropped. Time is the injected clock's. See docs/replicas-postgresql.md.
final class SessionMemory: Sendable {
    private struct Entry {
        var value: SessionWithAccount
        var storedAt: Duration
    }

    private struct Mark {
        var target: SessionEndTarget
        var until: Duration
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var marks: [String: Mark] = [:]
        var epoch = 0
        /// Until when the registration's lease lets this memory answer (replicas only).
        var leaseUntil: Duration?
        /// Before this, the replica may have missed an announcement that is still to commit (replicas only).
        var warmFrom: Duration?
        /// When the last renewal that returned was sent.
        var lastRenewal: Duration?
    }

    private let state = Mutex(State())
    let clock: any MonotonicClock
    let timings: SessionTimings
    /// Whether it answers without a lease: SQLite's one process, where nothing else announces.
    let needsNoLease: Bool
    /// Entries kept at most.
    let capacity: Int

    init(clock: any MonotonicClock, timings: SessionTimings, needsNoLease: Bool, capacity: Int = 100_000) {
        self.clock = clock
        self.timings = timings
        self.needsNoLease = needsNoLease
        self.capacity = capacity
    }

    /// A remembered live session, with the memo that lives and goes with its entry, or `nil` when the database must
    /// answer.
    func lookup(_ tokenHash: String) -> SessionWithAccount? {
        let now = clock.now
        return state.withLock { state in
            guard mayAnswer(state, now: now), let entry = state.entries[tokenHash] else { return nil }
            guard !isPastLifetime(entry.storedAt, now: now) else {
                state.entries[tokenHash] = nil
                return nil
            }
            return entry.value
        }
    }

    /// Whether it answers now.
    var answers: Bool {
        let now = clock.now
        return state.withLock { mayAnswer($0, now: now) }
    }

    /// The epoch to pass to ``remember(_:_:readAt:)`` for a read that starts now.
    var epoch: Int { state.withLock { $0.epoch } }

    /// Keeps a session read from the database since `epoch`, if it is live and nothing was marked or forgotten meanwhile.
    func remember(_ tokenHash: String, _ value: SessionWithAccount, readAt epoch: Int) {
        guard value.session.endedAt == nil, let account = value.account else { return }
        let now = clock.now
        state.withLock { state in
            guard state.epoch == epoch, mayAnswer(state, now: now) else { return }
            for mark in state.marks.values where mark.until > now && Self.covers(mark.target, tokenHash, account.id) {
                return
            }
            if state.entries.count >= capacity { evict(&state, now: now) }
            var kept = value
            kept.memo = SessionMemo()
            state.entries[tokenHash] = Entry(value: kept, storedAt: now)
        }
    }

    /// A change is about to end `target`'s sessions: drops them and keeps them from being remembered until
    /// ``resolve(_:ending:)`` or ``SessionTimings/markLifetime``. Returns how many entries it dropped.
    @discardableResult
    func mark(_ change: String, _ target: SessionEndTarget) -> Int {
        let now = clock.now
        return state.withLock { state in
            state.epoch += 1
            state.marks = state.marks.filter { $0.value.until > now }
            state.marks[change] = Mark(target: target, until: now + timings.markLifetime)
            return Self.drop(target, from: &state)
        }
    }

    /// The change committed or rolled back; what it names as ended (its outcome message) is dropped, whatever became of
    /// its mark: a mark that lapsed before a slow commit returned let a read bring those sessions back.
    func resolve(_ change: String, ending target: SessionEndTarget?) {
        state.withLock { state in
            state.epoch += 1
            state.marks[change] = nil
            if let target { _ = Self.drop(target, from: &state) }
        }
    }

    /// Forgets what is remembered of `target`'s sessions (their account's shown fields changed).
    func forget(_ target: SessionEndTarget) {
        state.withLock { state in
            state.epoch += 1
            _ = Self.drop(target, from: &state)
        }
    }

    /// Forgets everything (another process changed the database in a way this one cannot tell apart).
    func forgetAll() {
        state.withLock { state in
            state.epoch += 1
            state.entries.removeAll(keepingCapacity: true)
        }
    }

    /// Whether the check of `tokenHash` at `minute` is to be written to `last_seen_at`: `false` when the remembered
    /// session already shows that minute or a later one; otherwise the entry shows `minute` from now on, so that the
    /// session's next checks this minute write nothing.
    func noteSeen(_ tokenHash: String, minute: Date) -> Bool {
        state.withLock { state in
            guard var entry = state.entries[tokenHash] else { return true }
            if let seen = entry.value.session.lastSeenAt, seen >= minute { return false }
            entry.value.session.lastSeenAt = minute
            state.entries[tokenHash] = entry
            return true
        }
    }

    /// A renewal of the registration sent at `sentAt` returned now: the memory may answer until `sentAt + lease`. When
    /// the lease had lapsed, before the renewal was sent or while it was under way (a change meanwhile no longer waited
    /// for this replica), announcements may have gone unheard: the memory forgets everything and answers nothing for
    /// the warm-up.
    func renewed(sentAt: Duration) {
        let now = clock.now
        state.withLock { state in
            if state.leaseUntil.map({ sentAt >= $0 || now >= $0 }) ?? true {
                state.epoch += 1
                state.entries.removeAll(keepingCapacity: true)
                state.warmFrom = sentAt + timings.warmUp
            }
            state.leaseUntil = sentAt + timings.lease
            state.lastRenewal = sentAt
        }
    }

    /// When the last renewal that returned was sent.
    var lastRenewal: Duration? { state.withLock { $0.lastRenewal } }

    /// The listener is gone: forget everything and answer nothing until a new lease.
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

    /// Drops every entry past its lifetime, and with it what was kept beside it (an opened account, a rendered answer):
    /// run once a lifetime (``MemorySweep``), so that an entry no check asks for again holds nothing for more than two.
    /// Returns how many it dropped.
    @discardableResult
    func sweep() -> Int {
        let now = clock.now
        return state.withLock { dropPastLifetime(&$0, now: now) }
    }

    /// How many sessions are remembered.
    var count: Int { state.withLock { $0.entries.count } }

    private func mayAnswer(_ state: State, now: Duration) -> Bool {
        if needsNoLease { return true }
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

    /// Whether an entry stored at `storedAt` is past its lifetime at `now`.
    private func isPastLifetime(_ storedAt: Duration, now: Duration) -> Bool {
        now - storedAt >= timings.entryLifetime
    }

    /// Drops the entries past their lifetime; returns how many.
    @discardableResult
    private func dropPastLifetime(_ state: inout State, now: Duration) -> Int {
        let expired = state.entries.compactMap { isPastLifetime($0.value.storedAt, now: now) ? $0.key : nil }
        for hash in expired { state.entries[hash] = nil }
        return expired.count
    }

    /// Makes room: entries past their lifetime go, then the oldest tenth.
    private func evict(_ state: inout State, now: Duration) {
        dropPastLifetime(&state, now: now)
        guard state.entries.count >= capacity else { return }
        let oldest = state.entries.sorted { $0.value.storedAt < $1.value.storedAt }.prefix(max(1, capacity / 10))
        for (hash, _) in oldest { state.entries[hash] = nil }
    }
}
