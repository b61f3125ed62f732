import Testing

@testable import OrchardServer

/// Where the connection watcher finds each request's end in the bytes before the HTTP decoder (``RequestFraming``),
/// however the bytes are split into reads: the whole server's pipelining deadlines are in `SlowClientTests`.
@Suite("Request framing: where each request ends, however its bytes arrive", .backendIndependent)
struct RequestFramingTests {
    /// The ends the framing reports for `bytes` read in `pieces`, as offsets into `bytes`.
    static func ends(_ bytes: [UInt8], reads pieces: [Range<Int>]) -> [Int] {
        var framing = RequestFraming()
        var ends: [Int] = []
        for piece in pieces {
            var start = piece.lowerBound
            while start < piece.upperBound, let end = bytes[start..<piece.upperBound].withUnsafeBytes({ framing.end(in: $0) }) {
                ends.append(start + end)
                start += end
            }
        }
        return ends
    }

    /// Every way of reading `bytes` in two reads, and one byte at a time.
    static func readings(of bytes: [UInt8]) -> [[Range<Int>]] {
        (0...bytes.count).map { [0..<$0, $0..<bytes.count] } + [bytes.indices.map { $0..<($0 + 1) }]
    }

    @Test("pipelined heads and Content-Length bodies (any case, spaces around the value) end where they end, split anywhere")
    func pipelined() {
        let requests = [
            "GET /health/live HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer x\r\n\r\n",
            "POST /v1/apple/notifications HTTP/1.1\r\nHost: a\r\ncontent-LENGTH: \t11 \r\nContent-Type: application/json\r\n\r\nhello\r\n\r\nxy",
            "POST /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "GET /y HTTP/1.1\r\nX-Content-Length: 5\r\nContent-Length : 3\r\n\r\n",
        ]
        let bytes = Array(requests.joined().utf8)
        var expected: [Int] = []
        for request in requests { expected.append((expected.last ?? 0) + request.utf8.count) }
        for reads in Self.readings(of: bytes) {
            #expect(Self.ends(bytes, reads: reads) == expected, "reads \(reads.prefix(2))")
        }
    }

    @Test("a chunked body, a Content-Length that is no number, and a head past 80 KiB leave the rest of the connection unframed")
    func opaque() {
        let chunked = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n"
        let garbled = "POST /x HTTP/1.1\r\nContent-Length: 1x\r\n\r\nGET / HTTP/1.1\r\n\r\n"
        for text in [chunked, garbled] {
            let bytes = Array(("GET / HTTP/1.1\r\n\r\n" + text).utf8)
            for reads in Self.readings(of: bytes) {
                #expect(Self.ends(bytes, reads: reads) == [18], "\(text.prefix(40)), reads \(reads.prefix(2))")
            }
        }
        let long = Array(("GET / HTTP/1.1\r\nX-Long: " + String(repeating: "a", count: 81 * 1024) + "\r\n\r\nGET / HTTP/1.1\r\n\r\n").utf8)
        #expect(Self.ends(long, reads: [0..<long.count]).isEmpty)
    }
}
