import Accounts
import Foundation
import Testing

@Suite("The system's random source")
struct RandomSourceTests {
    @Test("bytes(n) gives exactly n bytes for lengths around its eight-byte steps, and ids and tokens keep their shapes")
    func lengths() {
        let random = SystemRandomSource()
        for count in [0, 1, 7, 8, 9, 16, 31, 32, 33] { #expect(random.bytes(count).count == count, "\(count)") }
        #expect(random.id("evt_").wholeMatch(of: /evt_[0-9a-f]{32}/) != nil)
        #expect(random.token().count == 43)
        // 256 bits twice alike would mean a broken generator, not bad luck.
        #expect(random.bytes(32) != random.bytes(32))
        // Every byte value turns up: the bytes are not drawn from a narrower range.
        #expect(Set(random.bytes(8_192)).count == 256)
    }

    @Test("an id for a row written at an instant keeps the id's shape, starts with the instant's milliseconds, and sorts by it")
    func timeOrderedIDs() {
        let random = SystemRandomSource()
        let at = Date(timeIntervalSince1970: 1_796_000_000.1235)
        let id = random.id("evt_", at: at)
        #expect(id.wholeMatch(of: /evt_[0-9a-f]{32}/) != nil, "\(id)")
        // 1,796,000,000,123 ms is 0x01a2_29f1_287b.
        #expect(id.hasPrefix("evt_01a229f1287b"), "\(id)")
        #expect(random.id("evt_", at: at) != id, "the other 80 bits are random")
        let later = (1...1_000).map { random.id("whd_", at: at.addingTimeInterval(Double($0) / 1000)) }
        #expect(zip(later, later.dropFirst()).allSatisfy { $0 < $1 }, "ids of later rows sort after earlier ones")
        #expect(random.id("evt_", at: Date(timeIntervalSince1970: 0)).hasPrefix("evt_000000000000"))
    }
}
