import Accounts
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
}
