import Crypto
import Testing

@testable import AppleID

/// The one hex encoder: the same lowercase text whether the bytes are kept contiguously (an array, a buffer, a
/// digest's storage) or come one by one.
@Suite("Hex: lowercase text of bytes")
struct HexTests {
    @Test("every byte value becomes its two lowercase digits, from an array and from a sequence of single bytes")
    func everyByte() {
        let bytes = (0...255).map { UInt8($0) }
        let expected = bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        #expect(bytes.hexString == expected)
        // Not contiguous: the bytes come one by one.
        #expect((0...255).lazy.map { UInt8($0) }.hexString == expected)
        #expect([UInt8]().hexString == "")
    }

    @Test("a digest is read from its own storage: SHA-256 of \"abc\", as FIPS 180-2 gives it")
    func digest() {
        let digest = SHA256.hash(data: Array("abc".utf8))
        #expect(digest.hexString == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(digest.hexString == Array(digest).hexString)
        #expect(SHA256.hash(utf8: "abc").hexString == digest.hexString)
    }
}
