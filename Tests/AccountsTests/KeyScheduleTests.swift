import Accounts
import Foundation
import Testing

/// The signing keys' schedule as a pure function of the stored keys and the time.
@Suite("Access-token key schedule")
struct KeyScheduleTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func key(_ generation: Int, activatesAt: Date, withdrawnAt: Date? = nil) -> SigningKeyRecord {
        SigningKeyRecord(
            id: "key_\(generation)",
            generation: generation,
            sealedPrivateKey: withdrawnAt == nil ? "sealed" : nil,
            publicX: "x",
            publicY: "y",
            createdAt: activatesAt,
            activatesAt: activatesAt,
            withdrawnAt: withdrawnAt
        )
    }

    static func schedule(_ keys: [SigningKeyRecord]) -> KeySchedule {
        KeySchedule(keys: keys, ttl: .seconds(300), lifetime: .seconds(86_400))
    }

    @Test("no key: one is due at once; a first key signs at once")
    func firstKey() {
        #expect(Self.schedule([]).dueKeyActivation(at: Self.start) == Self.start)
        let one = Self.schedule([Self.key(1, activatesAt: Self.start)])
        #expect(one.current(at: Self.start)?.id == "key_1")
        #expect(one.dueKeyActivation(at: Self.start) == nil)
        #expect(one.published(at: Self.start).map(\.id) == ["key_1"])
    }

    @Test("the next key is due ttl + 300 s before the lifetime's end and takes over at that end, or later if made late")
    func nextKeyTiming() {
        let one = Self.schedule([Self.key(1, activatesAt: Self.start)])
        let end = Self.start.addingTimeInterval(86_400)
        #expect(one.dueKeyActivation(at: end.addingTimeInterval(-601)) == nil)
        #expect(one.dueKeyActivation(at: end.addingTimeInterval(-600)) == end)
        #expect(one.dueKeyActivation(at: end.addingTimeInterval(-100)) == end.addingTimeInterval(500), "published 600 s before it signs")
        #expect(one.nextChange(after: Self.start) == end.addingTimeInterval(-600))
    }

    @Test("a retired key stays published for ttl after the next took over, then expires and is removed a day later")
    func retirement() {
        let end = Self.start.addingTimeInterval(86_400)
        let two = Self.schedule([Self.key(1, activatesAt: Self.start), Self.key(2, activatesAt: end)])
        #expect(two.state(of: two.keys[1], at: end.addingTimeInterval(-1)) == .next)
        #expect(two.current(at: end.addingTimeInterval(-1))?.id == "key_1")
        #expect(two.current(at: end)?.id == "key_2")
        #expect(two.state(of: two.keys[0], at: end.addingTimeInterval(299)) == .retired)
        #expect(two.published(at: end.addingTimeInterval(299)).map(\.id) == ["key_1", "key_2"])
        #expect(two.state(of: two.keys[0], at: end.addingTimeInterval(300)) == .expired)
        #expect(two.published(at: end.addingTimeInterval(300)).map(\.id) == ["key_2"])
        #expect(two.removable(at: end.addingTimeInterval(300 + 86_400)) == [])
        #expect(two.removable(at: end.addingTimeInterval(301 + 86_400)) == ["key_1"])
    }

    @Test("a withdrawn key is neither published nor signing, and a newer key signs")
    func withdrawal() {
        let now = Self.start.addingTimeInterval(1000)
        let keys = Self.schedule([Self.key(1, activatesAt: Self.start, withdrawnAt: now), Self.key(2, activatesAt: now)])
        #expect(keys.current(at: now)?.id == "key_2")
        #expect(keys.state(of: keys.keys[0], at: now) == .withdrawn)
        #expect(keys.published(at: now).map(\.id) == ["key_2"])
        #expect(keys.removable(at: now.addingTimeInterval(7 * 86_400 + 1)) == ["key_1"])
        #expect(keys.nextGeneration == 3)
    }
}
