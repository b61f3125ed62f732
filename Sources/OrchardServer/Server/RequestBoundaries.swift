import NIOCore

/// Finds where each HTTP/1.1 request ends in the bytes before the HTTP decoder, so that a request that begins in the
/// same read as the end of the one before (pipelining: a whole request and half the next in one segment) starts its
/// head deadline like any other. The decoder consumes every byte it is given and says nothing of a head it has only
/// begun, so without this such a half head waited for the idle timeout (60 s) instead of the head deadline (10 s).
///
/// It reads only the framing (``RequestFraming``) and hands each read on in the same bytes, split at request ends.
final class RequestBoundaryHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let deadline: HeadDeadlineHandler
    private var framing = RequestFraming()

    init(deadline: HeadDeadlineHandler) {
        self.deadline = deadline
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        while buffer.readableBytes > 0 {
            guard let end = buffer.withUnsafeReadableBytes({ framing.end(in: $0) }), end < buffer.readableBytes else {
                context.fireChannelRead(wrapInboundOut(buffer))
                return
            }
            let piece = buffer.readSlice(length: end)!
            context.fireChannelRead(wrapInboundOut(piece))
            // A request ended inside this read, and bytes follow it: the next request has begun.
            deadline.nextRequestBegan()
        }
    }
}

/// The framing of the HTTP/1.1 requests on one connection, followed through its bytes: a head ends at its blank line;
/// its body is `Content-Length` bytes, or none. A chunked body, whose end only the decoder finds, makes the framing
/// opaque for the rest of the connection (such a request's successor is then watched from its next read).
///
/// Every request's bytes pass through here, so it reads them in place, a byte at a time only where a head's end may
/// be, and makes no string but a `Content-Length` value (`Benchmarks/run`'s anchor and notification ingest guard this).
struct RequestFraming {
    private enum State {
        /// Reading a head: `matched` bytes of a blank line's `\r\n\r\n` seen at its end so far.
        case head(matched: Int)
        /// Reading a body of this many bytes more.
        case body(remaining: Int)
        /// A framing this does not follow: everything passes.
        case opaque
    }

    /// Heads longer than this are the decoder's to refuse; the framing stops following them.
    static let longestHead = 80 * 1024

    private var state = State.head(matched: 0)
    /// The head being read, kept only for its framing fields (at most ``longestHead`` bytes).
    private var headBytes: [UInt8] = []

    /// How many of `bytes` complete the current request, advancing the framing; `nil` when the request does not end
    /// within them.
    mutating func end(in bytes: UnsafeRawBufferPointer) -> Int? {
        var offset = 0
        while offset < bytes.count {
            switch state {
            case .opaque:
                return nil
            case .body(let remaining):
                let available = bytes.count - offset
                guard available >= remaining else {
                    state = .body(remaining: remaining - available)
                    return nil
                }
                state = .head(matched: 0)
                return offset + remaining
            case .head(var matched):
                let from = offset
                var index = from
                while index < bytes.count, matched < 4 {
                    switch bytes[index] {
                    case 13: matched = matched == 0 || matched == 2 ? matched + 1 : 1
                    case 10: matched = matched == 1 || matched == 3 ? matched + 1 : 0
                    default: matched = 0
                    }
                    index += 1
                }
                let kept = min(index - from, Self.longestHead - headBytes.count)
                if kept > 0 { headBytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[from..<from + kept])) }
                offset = index
                guard matched == 4 else {
                    state = headBytes.count >= Self.longestHead ? .opaque : .head(matched: matched)
                    return nil
                }
                // The head is whole: what follows is its body, if any.
                let length = Self.bodyLength(of: headBytes)
                headBytes = []
                switch length {
                case .some(0):
                    state = .head(matched: 0)
                    return offset
                case .some(let length):
                    state = .body(remaining: length)
                case .none:
                    state = .opaque
                    return nil
                }
            }
        }
        return nil
    }

    /// The body's length by the head's framing fields: 0 without either, `nil` for a chunked body (or one this cannot
    /// read).
    private static func bodyLength(of head: [UInt8]) -> Int? {
        guard head.count < longestHead else { return nil }
        var length = 0
        var lineStart = 0
        var first = true
        // Line by line: only a line whose name is one of the two (ASCII, any case) is looked at further.
        for index in head.indices where head[index] == 10 {
            defer { lineStart = index + 1 }
            if first {
                first = false
                continue
            }
            let line = head[lineStart..<index]
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = line[..<colon]
            if Self.name(name, is: "transfer-encoding") { return nil }
            if Self.name(name, is: "content-length") {
                var start = colon + 1
                var end = line.endIndex
                while start < end, Self.isSpace(head[start]) { start += 1 }
                while end > start, Self.isSpace(head[end - 1]) { end -= 1 }
                guard let parsed = Int(String(decoding: head[start..<end], as: UTF8.self)), parsed >= 0 else { return nil }
                length = parsed
            }
        }
        return length
    }

    /// Whether `name` is `lowercased`, in any ASCII case.
    private static func name(_ name: ArraySlice<UInt8>, is lowercased: StaticString) -> Bool {
        guard name.count == lowercased.utf8CodeUnitCount else { return false }
        return lowercased.withUTF8Buffer { expected in
            zip(name, expected).allSatisfy { byte, wanted in byte == wanted || (byte | 0x20 == wanted && wanted >= UInt8(ascii: "a")) }
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == 13 || byte == 10 || byte == 11 || byte == 12
    }
}
