import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small HTTP server on 127.0.0.1 over POSIX sockets, for races: it answers each `METHOD /path` from a table, records
/// every request it received, and holds the answers to gated routes until the test calls ``openGate()``. So a test can
/// act while OrchardKit waits on "Orchard", knowing the request has arrived, without waiting for a fixed time.
final class GatedServer: @unchecked Sendable {
    /// An answer: `status` with a JSON `body`; a `gated` answer waits for ``openGate()``.
    struct Answer: Sendable {
        var status: Int
        var body: String
        var gated: Bool = false
    }

    /// Where it listens, as OrchardKit's `baseURL`.
    let url: URL
    private let listener: Int32
    private let answers: [String: Answer]
    private let condition = NSCondition()
    private var received: [String] = []
    private var gateOpen = false
    private var stopped = false

    /// Starts listening on a free loopback port; `answers` is keyed by `METHOD /path`, anything else is answered 404.
    init(answers: [String: Answer]) throws {
        self.answers = answers
        #if canImport(Glibc)
        let stream = Int32(SOCK_STREAM.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        let listener = socket(AF_INET, stream, 0)
        guard listener >= 0 else { throw Failure("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 && listen(listener, 16) == 0
            }
        }
        guard listening else {
            close(listener)
            throw Failure("could not listen on 127.0.0.1")
        }
        self.listener = listener
        url = URL(string: "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))")!
        Thread { [self] in acceptConnections() }.start()
    }

    /// The requests received so far, as `METHOD /path`, in order of arrival.
    var requests: [String] { condition.withLock { received } }

    /// Lets the gated answers go, the held ones and any later ones.
    func openGate() {
        condition.withLock {
            gateOpen = true
            condition.broadcast()
        }
    }

    /// Stops accepting connections and releases any held answer.
    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptConnections() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                return
            }
            Thread { [self] in serve(connection) }.start()
        }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        guard let request = readRequest(connection) else { return }
        condition.withLock { received.append(request) }
        let answer = answers[request] ?? Answer(status: 404, body: #"{"code": "not_found"}"#)
        if answer.gated {
            condition.withLock {
                while !gateOpen && !stopped { condition.wait() }
            }
        }
        let body = Data(answer.body.utf8)
        let head = "HTTP/1.1 \(answer.status) Test\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        sendAll(Data(head.utf8) + body, on: connection)
    }

    /// Reads one request's head and body; returns `METHOD /path`.
    private func readRequest(_ connection: Int32) -> String? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        var bodyLength = 0
        while true {
            if headEnd == nil, let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) {
                headEnd = end + separator.count
                let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n").map { $0.lowercased() }
                for line in lines where line.hasPrefix("content-length:") {
                    bodyLength = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
                if lines.contains(where: { $0.hasPrefix("expect:") && $0.contains("100-continue") }) {
                    sendAll(Data("HTTP/1.1 100 Continue\r\n\r\n".utf8), on: connection)
                }
            }
            if let headEnd, bytes.count >= headEnd + bodyLength {
                let requestLine = String(decoding: bytes.prefix(while: { $0 != UInt8(ascii: "\r") }), as: UTF8.self)
                let parts = requestLine.split(separator: " ")
                guard parts.count >= 2 else { return nil }
                return "\(parts[0]) \(parts[1])"
            }
            let count = read(connection, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            bytes += chunk[..<count]
        }
    }

    /// Sends all of `data`; a client that went away is no error, and raises no SIGPIPE.
    private func sendAll(_ data: Data, on connection: Int32) {
        #if canImport(Glibc)
        let flags = Int32(MSG_NOSIGNAL)
        #else
        var on: Int32 = 1
        setsockopt(connection, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        let flags: Int32 = 0
        #endif
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let sent = send(connection, base + offset, buffer.count - offset, flags)
                if sent < 0, errno == EINTR { continue }
                guard sent > 0 else { return }
                offset += sent
            }
        }
    }
}
