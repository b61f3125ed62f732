import AppleID
import Foundation
import Testing

@Suite("base64url")
struct Base64URLTests {
    @Test("RFC 4648's test vectors, without padding, and their decoding with and without it")
    func vectors() {
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded.utf8) == Data(plain.utf8))
            let padded = encoded + String(repeating: "=", count: (4 - encoded.count % 4) % 4)
            #expect(Base64URL.decode(padded.utf8) == Data(plain.utf8))
        }
    }

    @Test("the URL alphabet: - and _ where base64 has + and /")
    func alphabet() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF, 0xFE]
        #expect(Data(bytes).base64EncodedString() == "+/+//g==")
        #expect(Base64URL.encode(bytes) == "-_-__g")
        #expect(Base64URL.decode("-_-__g".utf8) == Data(bytes))
    }

    @Test("every length round-trips")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64URL.decode(text.utf8) == Data(bytes))
        }
    }

    @Test("text that is not base64url decodes to nothing", arguments: ["a", "Zm9v!", "Zm 9v", "Zm9vY===", "é"])
    func invalid(text: String) {
        #expect(Base64URL.decode(text.utf8) == nil)
    }
}
