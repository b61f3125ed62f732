import Foundation
import NIOCore

/// Finds where each HTTP/1.1 request ends in the bytes before the HTTP decoder, so that a request that begins in the
/// same read as the end of the one before (pipelining: a whole request and half the next in one segment) starts its
/// head deadline like any other. The decoder consumes every byte it is given and says nothing of a head it has only
/// begun, so without this such a half head waited for the idle timeout (60 s) instead of the head deadline (10 s).
///
/// It reads only the framing (a head ends at its blank line; its body is `Content-Length` bytes, or none) and hands
/// each read on in the same bytes, split at request ends. A chunked body, whose end only the decoder finds, turns it
/// into a pass-through for the rest of the connection: such a request's successor is then watched as before, from its
/// next read.
final class RequestBoundaryHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private enum State {
        /// Reading a head: `matched` bytes of a blank line's `\r\n\r\n` seen at its end so far.
        case head(matched: Int)
        /// Reading a body of this many bytes more.
        case body(remaining: Int)
        /// A framing this handler does not follow: everything passes.
        case opaque
    }

    /// Heads longer than this are the decoder's to refuse; this handler stops following them.
    private static let longestHead = 80 * 1024

    private let deadline: HeadDeadlineHandler
    private var state = State.head(matched: 0)
    /// The head being read, kept only for its framing fields (at most ``longestHead`` bytes).
    private var headBytes: [UInt8] = []

    init(deadline: HeadDeadlineHandler) {
        self.deadline = deadline
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        while buffer.readableBytes > 0 {
            guard let end = requestEnd(in: buffer.readableBytesView), end < buffer.readableBytes else {
                context.fireChannelRead(wrapInboundOut(buffer))
                return
            }
            let piece = buffer.readSlice(length: end)!
            context.fireChannelRead(wrapInboundOut(piece))
            // A request ended inside this read, and bytes follow it: the next request has begun.
            deadline.nextRequestBegan()
        }
    }

    /// How many of `bytes` complete the current request, advancing the framing state; `nil` when the request does not
    /// end within them.
    private func requestEnd(in bytes: ByteBufferView) -> Int? {
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
                let from = bytes.startIndex + offset
                var index = from
                while index < bytes.endIndex, matched < 4 {
                    switch bytes[index] {
                    case 13: matched = matched == 0 || matched == 2 ? matched + 1 : 1
                    case 10: matched = matched == 1 || matched == 3 ? matched + 1 : 0
                    default: matched = 0
                    }
                    index += 1
                }
                if headBytes.count < Self.longestHead { headBytes += bytes[from..<index].prefix(Self.longestHead - headBytes.count) }
                offset = index - bytes.startIndex
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

    /// The body's length by the head's framing fields: 0 without either, `nil` for a chunked body (or one this handler
    /// cannot read).
    private static func bodyLength(of head: [UInt8]) -> Int? {
        guard head.count < longestHead else { return nil }
        var length = 0
        var lineStart = 0
        var first = true
        // Line by line, without making strings: only a line that begins like one of the two names is looked at.
        for index in head.indices where head[index] == 10 {
            defer { lineStart = index + 1 }
            if first {
                first = false
                continue
            }
            guard lineStart < index, head[lineStart] | 0x20 == UInt8(ascii: "c") || head[lineStart] | 0x20 == UInt8(ascii: "t") else { continue }
            let line = String(decoding: head[lineStart..<index], as: UTF8.self)
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            if name == "transfer-encoding" { return nil }
            if name == "content-length" {
                guard let parsed = Int(line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)), parsed >= 0 else {
                    return nil
                }
                length = parsed
            }
        }
        return length
    }
}
