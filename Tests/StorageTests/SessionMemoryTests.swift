import Accounts
import Foundation
import Testing

@testable import Storage

/// The rules one replica's memory keeps, without a database: what it may answer, and what a change it hears of takes
/// away.
@Suite("Session memory: it answers only what no change it heard of is ending, and only while its lease is current")
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

    /// A memory whose lease began `warmUp` ago, so that it answers at `now`.
    static func warm(at now: ContinuousClock.Instant) -> SessionMemory {
        let memory = SessionMemory()
        for second in (0...6).reversed() {
            memory.renewed(sentAt: now - .seconds(second), lease: .seconds(2), warmUp: .seconds(5))
        }
        return memory
    }

    @Test("nothing is answered before the warm-up has passed, nor after the lease has lapsed; a lapse forgets everything")
    func lease() {
        let start = ContinuousClock.now
        let memory = SessionMemory()
        memory.renewed(sentAt: start, lease: .seconds(2), warmUp: .seconds(5))
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch, now: start + .milliseconds(100))
        #expect(memory.count == 0, "remembered while warming up")
        memory.renewed(sentAt: start + .seconds(1), lease: .seconds(2), warmUp: .seconds(5))
        memory.renewed(sentAt: start + .seconds(2), lease: .seconds(2), warmUp: .seconds(5))
        memory.renewed(sentAt: start + .seconds(3), lease: .seconds(2), warmUp: .seconds(5))
        memory.renewed(sentAt: start + .seconds(4), lease: .seconds(2), warmUp: .seconds(5))
        memory.renewed(sentAt: start + .seconds(5), lease: .seconds(2), warmUp: .seconds(5))
        let warm = start + .milliseconds(5_100)
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch, now: warm)
        #expect(memory.lookup("t1", now: warm) != nil)
        // Entries answer for one second at most.
        #expect(memory.lookup("t1", now: warm + .milliseconds(1_100)) == nil)
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch, now: warm + .milliseconds(1_200))
        // The lease runs out 2 s after the last renewal was sent.
        #expect(memory.lookup("t1", now: start + .milliseconds(7_100)) == nil)
        // A renewal sent after the lapse: everything is forgotten, and it warms up again.
        memory.renewed(sentAt: start + .seconds(8), lease: .seconds(2), warmUp: .seconds(5))
        #expect(memory.count == 0)
        #expect(memory.lookup("t1", now: start + .milliseconds(8_100)) == nil)
    }

    @Test("a heard change drops its sessions and keeps them from being remembered until it resolves or 5 s pass")
    func marks() {
        let now = ContinuousClock.now
        let memory = Self.warm(at: now)
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch, now: now)
        memory.remember("t2", Self.live("t2", account: "acct_2"), readAt: memory.epoch, now: now)
        #expect(memory.mark("c1", .accounts(["acct_1"]), now: now) == 1)
        #expect(memory.lookup("t1", now: now) == nil)
        #expect(memory.lookup("t2", now: now) != nil)
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch, now: now)
        #expect(memory.lookup("t1", now: now) == nil, "remembered while its account's change was pending")
        memory.resolve("c1")
        memory.remember("t1", Self.live("t1"), readAt: memory.epoch, now: now)
        #expect(memory.lookup("t1", now: now) != nil)
        // A mark whose outcome never comes lapses after 5 s.
        memory.mark("c2", .sessions(["t2"]), now: now)
        memory.remember("t2", Self.live("t2", account: "acct_2"), readAt: memory.epoch, now: now + .milliseconds(4_900))
        #expect(memory.lookup("t2", now: now + .milliseconds(4_900)) == nil)
    }

    @Test("a read that was under way when a change was heard is not remembered, whatever it found")
    func readAcrossAnnouncement() {
        let now = ContinuousClock.now
        let memory = Self.warm(at: now)
        let epoch = memory.epoch
        // The change is announced and resolved while the read is in flight.
        memory.mark("c1", .sessions(["t1"]), now: now)
        memory.resolve("c1")
        memory.remember("t1", Self.live("t1"), readAt: epoch, now: now)
        #expect(memory.lookup("t1", now: now) == nil)
    }

    @Test("an ended session, or one whose account is gone, is never remembered")
    func onlyLive() {
        let now = ContinuousClock.now
        let memory = Self.warm(at: now)
        var ended = Self.live("t1")
        ended.session.endedAt = Date()
        memory.remember("t1", ended, readAt: memory.epoch, now: now)
        memory.remember("t2", SessionWithAccount(session: Self.live("t2").session, account: nil), readAt: memory.epoch, now: now)
        #expect(memory.count == 0)
    }
}
