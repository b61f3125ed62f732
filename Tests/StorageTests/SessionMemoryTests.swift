import Accounts
import Foundation
import OrchardTesting
import Testing

@testable import Storage

/// The rules one process's memory keeps, without a database and on a clock the test moves: what it may answer, and
/// what a change it hears of takes away.
@Suite("Session memory: it answers only what no change it heard of is ending, and only while its lease is current", .backendIndependent)
struct SessionMemoryTests {
    static func live(_ tokenHash: String, account: String = "acct_1") -> SessionWithAccount {
        let now = Date()
        return SessionWithAccount(
            session: SessionRecord(
                id: "sess_\(tokenHash)",
                tokenHash: tokenHash,
                accountID: account,
                createdAt: now,
                expiresAt: now.addingTimeInterval(60)
            ),
            account: SealedAccountView(
                id: account,
                sealedSubject: "v1.k.s",
                sealedEmail: nil,
                isPrivateEmail: true,
                emailForwarding: .enabled,
                sealedName: nil,
                appleCredential: .valid,
                lastValidatedAt: nil,
                createdAt: now,
                clientID: "com.example.app"
            )
        )
    }

    @Test("what the memory hands out is a value: copies share their storage, and a change to one leaves the others as read")
    func handedOutSessionsAreValues() {
        let original = Self.live("t1")
        var copy = original
        #expect(copy == original)
        copy.memo = SessionMemo()
        #expect(original.memo == nil, "a copy's memo reached the original")
        #expect(copy == original, "the memo is not part of what was read")
        copy.session.endReason = .signedOut
        copy.account?.emailForwarding = .disabled
        #expect(original.session.endReason == nil)
        #expect(original.account?.emailForwarding == .enabled)
        #expect(copy != original)
        #expect(copy.memo != nil, "changing a field dropped the memo")
        copy.account = nil
        #expect(original.account != nil)
    }

    /// A replica's memory on `clock`, renewed every half second until its warm-up has passed, so that it answers now.
    static func warm(_ clock: ManualMonotonicClock) -> SessionMemory {
        let memory = SessionMemory(clock: clock, timings: .replicas, needsNoLease: false)
        for _ in 0..<12 {
            memory.renewed(sentAt: clock.now)
            clock.advance(by: .milliseconds(500))
        }
        memory.renewed(sentAt: clock.now)
        return memory
    }

    @Test("nothing is answered before the warm-up has passed, nor after the lease has lapsed; a lapse forgets everything")
    func lease() {
        let clock = ManualMonotonicClock()
        let start = clock.now
        let memory = SessionMemory(clock: clock, timings: .replicas, needsNoLease: false)
        memory.renewed(sentAt: start)
        clock.advance(by: .milliseconds(100))
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
        #expect(memory.count == 0, "remembered while warming up")
        for _ in 0..<10 {
            clock.advance(by: .milliseconds(500))
            memory.renewed(sentAt: clock.now)
        }
        // 5.1 s after the first renewal: 0.4 s short of the 5.5 s warm-up.
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
        #expect(memory.count == 0, "remembered before the warm-up ended")
        clock.advance(by: .milliseconds(400))
        memory.renewed(sentAt: clock.now)
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
        #expect(memory.lookup("t1") != nil)
        // Entries answer for one second at most.
        clock.advance(by: .milliseconds(1_100))
        #expect(memory.lookup("t1") == nil)
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
        // The lease runs out 2 s after the last renewal was sent: here 1.1 s ago, so 0.9 s are left.
        clock.advance(by: .milliseconds(800))
        #expect(memory.lookup("t1") != nil, "within the lease")
        clock.advance(by: .milliseconds(200))
        #expect(memory.lookup("t1") == nil, "past the lease")
        // A renewal sent after the lapse: everything is forgotten, and it warms up again.
        memory.renewed(sentAt: clock.now)
        #expect(memory.count == 0)
        #expect(memory.lookup("t1") == nil)
    }

    @Test("a renewal sent within the lease that returns after it lapsed forgets everything and warms up again")
    func lateRenewal() {
        let clock = ManualMonotonicClock()
        let memory = Self.warm(clock)
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
        #expect(memory.lookup("t1") != nil)
        // Sent with 0.5 s of the lease left; the database answers 3 s later, when other replicas' changes no longer
        // waited for this one.
        clock.advance(by: .milliseconds(1_500))
        let sent = clock.now
        clock.advance(by: .seconds(3))
        memory.renewed(sentAt: sent)
        #expect(memory.count == 0, "a lapse during the renewal kept what was remembered")
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
        #expect(memory.lookup("t1") == nil, "answered before warming up again")
    }

    @Test("a heard change drops its sessions and keeps them from being remembered until it resolves or 5 s pass")
    func marks() {
        let clock = ManualMonotonicClock()
        let memory = Self.warm(clock)
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
        memory.remember("t2", Self.live("t2", account: "acct_2"), readAt: memory.epoch)
        #expect(memory.mark("c1", .accounts(["acct_1"])) == 1)
        #expect(memory.lookup("t1") == nil)
        #expect(memory.lookup("t2") != nil)
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
        #expect(memory.lookup("t1") == nil, "remembered while its account's change was pending")
        memory.resolve("c1", ending: nil)
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
        #expect(memory.lookup("t1") != nil)

        // A mark whose outcome never comes keeps its sessions out for 5 s, and only 5 s: the lease is renewed
        // throughout, so that the mark alone decides.
        memory.mark("c2", .sessions(["t2"]))
        for _ in 0..<9 {
            clock.advance(by: .milliseconds(500))
            memory.renewed(sentAt: clock.now)
        }
        clock.advance(by: .milliseconds(400))
        memory.renewed(sentAt: clock.now)
        memory.remember("t2", Self.live("t2", account: "acct_2"), readAt: memory.epoch)
        #expect(memory.lookup("t2") == nil, "remembered at 4.9 s, before the mark lapsed")
        clock.advance(by: .milliseconds(200))
        memory.renewed(sentAt: clock.now)
        memory.remember("t2", Self.live("t2", account: "acct_2"), readAt: memory.epoch)
        #expect(memory.lookup("t2") != nil, "still kept out at 5.1 s, after the mark lapsed")
    }

    @Test("a change's outcome drops what it ended even after its mark lapsed (a slow commit)")
    func outcomeDropsAfterLapse() {
        let clock = ManualMonotonicClock()
        let memory = Self.warm(clock)
        memory.mark("c1", .sessions(["t1"]))
        for _ in 0..<12 {
            clock.advance(by: .milliseconds(500))
            memory.renewed(sentAt: clock.now)
        }
        // The mark lapsed; a read that found the session still live (the commit had not returned) is remembered.
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
        #expect(memory.lookup("t1") != nil)
        memory.resolve("c1", ending: .sessions(["t1"]))
        #expect(memory.lookup("t1") == nil, "the outcome did not drop the ended session")
    }

    @Test("a read that was under way when a change was heard is not remembered, whatever it found")
    func readAcrossAnnouncement() {
        let clock = ManualMonotonicClock()
        let memory = Self.warm(clock)
        let epoch = memory.epoch
        // The change is announced and resolved while the read is in flight.
        memory.mark("c1", .sessions(["t1"]))
        memory.resolve("c1", ending: nil)
        memory.remember("t1", Self.live("t1"), readAt: epoch)
        #expect(memory.lookup("t1") == nil)
    }

    @Test("an ended session, or one whose account is gone, is never remembered")
    func onlyLive() {
        let clock = ManualMonotonicClock()
        let memory = Self.warm(clock)
        var ended = Self.live("t1")
        ended.session.endedAt = Date()
        memory.remember("t1", ended, readAt: memory.epoch)
        memory.remember("t2", SessionWithAccount(session: Self.live("t2").session, account: nil), readAt: memory.epoch)
        #expect(memory.count == 0)
    }

    @Test("one process's memory (SQLite) answers without a lease, for its entries' lifetime")
    func singleProcess() {
        let clock = ManualMonotonicClock()
        let memory = SessionMemory(clock: clock, timings: .singleProcess, needsNoLease: true)
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
        #expect(memory.lookup("t1") != nil)
        clock.advance(by: .seconds(59))
        #expect(memory.lookup("t1") != nil)
        clock.advance(by: .seconds(2))
        #expect(memory.lookup("t1") == nil, "an entry answered past its lifetime")
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
        memory.forgetAll()
        #expect(memory.lookup("t1") == nil)
    }

    @Test("what is kept beside an entry (its memo) is the same across lookups and goes with the entry, however it goes")
    func memoGoesWithItsEntry() throws {
        let clock = ManualMonotonicClock()
        let memory = SessionMemory(clock: clock, timings: .singleProcess, needsNoLease: true)
        /// Remembers `t1` of `acct_1`, keeps a value beside it, and returns its memo.
        func remembered() throws -> SessionMemo {
            memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
            let memo = try #require(memory.lookup("t1")?.memo)
            memo.keep("rendered")
            #expect(memory.lookup("t1")?.memo === memo)
            #expect(memory.lookup("t1")?.memo?.value(of: String.self) == "rendered")
            return memo
        }
        let drops: [(String, () -> Void)] = [
            ("a change marked", { memory.mark("c1", .accounts(["acct_1"])) }),
            ("a change resolved", { memory.resolve("c2", ending: .sessions(["t1"])) }),
            ("the account's fields changed", { memory.forget(.accounts(["acct_1"])) }),
            ("another process changed the file", { memory.forgetAll() }),
            ("the entry's lifetime passed", { clock.advance(by: .seconds(61)) }),
        ]
        for (what, drop) in drops {
            let memo = try remembered()
            drop()
            #expect(memory.lookup("t1") == nil, "\(what): the entry stayed")
            memory.resolve("c1", ending: nil)
            memory.remember("t1", Self.live("t1"), readAt: memory.epoch)
            let next = memory.lookup("t1")?.memo
            #expect(next != nil && next !== memo, "\(what): the memo came back with a new read")
            #expect(next?.value(of: String.self) == nil, "\(what): a new entry's memo held the old rendering")
        }
        // Noting a check's minute changes the entry's last_seen_at, which no answer shows: the memo stays.
        let memo = try remembered()
        #expect(memory.noteSeen("t1", minute: Date()))
        #expect(memory.lookup("t1")?.memo === memo)
    }

    @Test("the sweep drops the entries past their lifetime, with their memos, and nothing younger")
    func sweep() {
        let clock = ManualMonotonicClock()
        let memory = SessionMemory(clock: clock, timings: .singleProcess, needsNoLease: true)
        memory.remember("old", Self.live("old"), readAt: memory.epoch)
        memory.lookup("old")?.memo?.keep("opened")
        clock.advance(by: .seconds(30))
        memory.remember("young", Self.live("young", account: "acct_2"), readAt: memory.epoch)
        #expect(memory.sweep() == 0)
        #expect(memory.count == 2)
        clock.advance(by: .seconds(30))
        #expect(memory.sweep() == 1, "the entry 60 s old stayed")
        #expect(memory.count == 1)
        #expect(memory.lookup("young") != nil)
        clock.advance(by: .seconds(30))
        #expect(memory.sweep() == 1)
        #expect(memory.count == 0)
    }

    @Test("the sweep's service waits on the memory's clock: it sweeps once that clock passes an entry lifetime, not before")
    func sweepService() async throws {
        let clock = ManualMonotonicClock()
        let memory = SessionMemory(clock: clock, timings: .singleProcess, needsNoLease: true)
        memory.remember("old", Self.live("old"), readAt: memory.epoch)
        let sweeping = Task { try await MemorySweep(memory: memory).run() }
        #expect(await eventually(timeout: 10) { clock.sleeping == 1 }, "the sweep waits on the injected clock")
        clock.advance(by: .seconds(59))
        #expect(await eventually(timeout: 10) { clock.sleeping == 1 })
        #expect(memory.count == 1, "nothing is swept before the lifetime has passed on the memory's clock")
        clock.advance(by: .seconds(1))
        #expect(await eventually(timeout: 10) { memory.count == 0 }, "swept once the lifetime passed")
        sweeping.cancel()
        try await sweeping.value
    }
}
