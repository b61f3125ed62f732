import AppleID
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// Requests written byte for byte on a socket of their own, for what an HTTP client library would tidy up: a path
/// spelled `//v1/…` or `/./`, half a request head, a connection that says nothing.
public enum RawHTTP {
    /// An answer read off the socket: the status line's code and the whole text.
    public struct Answer: Sendable {
        /// The status code, or 0 when the server closed without answering.
        public let status: Int
        /// Everything the server sent.
        public let text: String

        /// The value of the first header field named `name` (case-insensitive).
        public func header(_ name: String) -> String? {
            let head = text.components(separatedBy: "\r\n\r\n").first ?? ""
            for line in head.components(separatedBy: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                if line[..<colon].lowercased() == name.lowercased() {
                    return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }

        /// The problem code of a problem-details answer.
        public var code: String? {
            guard let body = text.components(separatedBy: "\r\n\r\n").dropFirst().first,
                let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            else { return nil }
            return object["code"] as? String
        }
    }

    /// Sends `method target` with `headers` (and `Connection: close`) to `127.0.0.1:port` exactly as written, and reads
    /// the answer until the server closes.
    public static func send(
        port: Int,
        _ method: String,
        _ target: String,
        headers: [(String, String)] = [],
        body: String = ""
    ) async throws -> Answer {
        var request = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let exchange = try await exchange(port: port, sending: Array(request.utf8), closeWithin: .seconds(30))
        let text = String(decoding: exchange.received, as: UTF8.self)
        let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        return Answer(status: status, text: text)
    }

    /// What a raw exchange saw.
    public struct Exchange: Sendable {
        /// What the server sent.
        public let received: [UInt8]
        /// How long after the reference moment (see ``RawHTTP/exchange(port:answered:thenSending:expectingCloseAfter:closeWithin:)``)
        /// the server closed the connection; `nil`: still open when the wait gave up.
        public let closedAfter: Duration?
        /// How late this process's event loops ran: the longer of how late they ran a timer due when the close was
        /// expected (zero when no close was expected, or it came before) and the longest any of them went without
        /// running its jobs during the exchange (``LoopStalls``: a loop stalled when the connection opened accepts it,
        /// and arms its deadline, that much later). The close is seen, and timed, on these loops, and a server in this
        /// process runs its deadlines on them too: a test process too busy to run them on time delays the close by as
        /// much, and a bound on the close allows for it.
        public let timersLate: Duration
        /// When the wait gave up: what the kernel said of the connection then (``TCPConnectionState``); `nil` when the
        /// server closed it in time.
        public let stateAtGiveUp: String?

        /// Whether the connection was closed no earlier than `earliest` and no later than `latest` plus
        /// ``timersLate``.
        public func closed(between earliest: Duration, and latest: Duration) -> Bool {
            guard let closedAfter else { return false }
            return closedAfter >= earliest && closedAfter <= latest + timersLate
        }
    }

    /// Opens a connection to `127.0.0.1:port`, writes `bytes` (perhaps nothing, or half a request), and reads until the
    /// server closes the connection or `closeWithin` has passed.
    public static func exchange(
        port: Int,
        sending bytes: [UInt8],
        expectingCloseAfter expected: Duration? = nil,
        closeWithin: Duration
    ) async throws -> Exchange {
        try await exchange(port: port, answered: [], thenSending: bytes, expectingCloseAfter: expected, closeWithin: closeWithin)
    }

    /// Opens a connection to `127.0.0.1:port` and sends each of `requests` (whole requests that keep the connection
    /// alive), reading each answer before the next; then writes `tail` (perhaps nothing, or half a request) and reads
    /// until the server closes the connection or `closeWithin` has passed.
    ///
    /// The times are taken on the connection's event loop (when `tail` was written, else when the last answer, or the
    /// connection, arrived: the reference moment; and when the connection closed), so a test process slow to resume
    /// a task does not stretch them. With `expected`, a timer due that long after the reference runs on each of the
    /// process's event loops, and ``Exchange/timersLate`` says how late the latest of them ran.
    public static func exchange(
        port: Int,
        answered requests: [[UInt8]],
        thenSending tail: [UInt8],
        expectingCloseAfter expected: Duration? = nil,
        closeWithin: Duration
    ) async throws -> Exchange {
        let timeline = Timeline()
        let stalls = LoopStalls()
        let channel = try await connect(port: port, timeline: timeline)
        return try await channel.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            var received: [UInt8] = []
            for request in requests {
                try await outbound.write(ByteBuffer(bytes: request))
                var answer: [UInt8] = []
                while !Self.isCompleteAnswer(answer) {
                    guard let buffer = try await iterator.next() else { throw RawHTTPError("closed before answering") }
                    answer += Array(buffer.readableBytesView)
                }
                received += answer
            }
            let loop = channel.channel.eventLoop
            let reference: NIODeadline
            if tail.isEmpty {
                reference = timeline.markReference(written: false)
            } else {
                reference = try await channel.channel.writeAndFlush(ByteBuffer(bytes: tail))
                    .map { timeline.markReference(written: true) }.get()
            }
            let probes = expected.map { TimerProbes(due: reference + TimeAmount($0)) }
            // Past `closeWithin` the test closes the connection itself, which ends the read below.
            let giveUp = loop.scheduleTask(in: TimeAmount(closeWithin)) {
                if timeline.giveUpUnlessClosed(state: TCPConnectionState.describe(localPort: channel.channel.localAddress?.port)) {
                    channel.channel.close(promise: nil)
                }
            }
            do {
                while let buffer = try await iterator.next() { received += Array(buffer.readableBytesView) }
            } catch {
                // A reset counts as closed (the handler recorded it before the stream threw).
            }
            giveUp.cancel()
            let late = await probes?.lateness(closedAt: timeline.closedAt) ?? .zero
            return Exchange(
                received: received,
                closedAfter: timeline.closedAfterReference,
                timersLate: max(late, stalls.stop()),
                stateAtGiveUp: timeline.stateAtGiveUp
            )
        }
    }

    /// Opens a connection to `127.0.0.1:port`, writes `head` at once (a request head, when a body is dripped), then
    /// `bytes` one at a time, `interval` apart, reading until the server closes the connection or `closeWithin` has
    /// passed. The reference moment is the first write: a deadline counted from the request's start (or its head's
    /// end) closes the connection while the bytes still drip in; one that restarts with every byte never does.
    public static func drip(
        port: Int,
        after head: [UInt8] = [],
        bytes: [UInt8],
        every interval: Duration,
        expectingCloseAfter expected: Duration,
        closeWithin: Duration
    ) async throws -> Exchange {
        let timeline = Timeline()
        let stalls = LoopStalls()
        let channel = try await connect(port: port, timeline: timeline)
        return try await channel.executeThenClose { inbound, _ in
            let raw = channel.channel
            let loop = raw.eventLoop
            guard let first = bytes.first else { throw RawHTTPError("nothing to drip") }
            let reference = try await raw.writeAndFlush(ByteBuffer(bytes: head + [first])).map { timeline.markReference(written: true) }.get()
            let probes = TimerProbes(due: reference + TimeAmount(expected))
            let giveUp = loop.scheduleTask(in: TimeAmount(closeWithin)) {
                if timeline.giveUpUnlessClosed(state: TCPConnectionState.describe(localPort: raw.localAddress?.port)) {
                    raw.close(promise: nil)
                }
            }
            // Each later byte at its own time after the first, on the connection's loop; none after the close.
            let drips = bytes.dropFirst().enumerated().map { index, byte in
                loop.scheduleTask(deadline: reference + TimeAmount(interval * (index + 1))) {
                    if raw.isActive { raw.writeAndFlush(ByteBuffer(bytes: [byte]), promise: nil) }
                }
            }
            var received: [UInt8] = []
            do {
                for try await buffer in inbound { received += Array(buffer.readableBytesView) }
            } catch {
                // A reset counts as closed (the handler recorded it before the stream threw).
            }
            giveUp.cancel()
            for drip in drips { drip.cancel() }
            let late = await probes.lateness(closedAt: timeline.closedAt)
            return Exchange(
                received: received,
                closedAfter: timeline.closedAfterReference,
                timersLate: max(late, stalls.stop()),
                stateAtGiveUp: timeline.stateAtGiveUp
            )
        }
    }

    /// A connection to `127.0.0.1:port` whose opening, reads and closing `timeline` records.
    private static func connect(port: Int, timeline: Timeline) async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TimelineHandler(timeline: timeline))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
    }

    /// Whether `bytes` hold a whole answer: a head and as many body bytes as its `Content-Length` says.
    private static func isCompleteAnswer(_ bytes: [UInt8]) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n") else { return false }
        let head = text[..<end.lowerBound].lowercased()
        let length =
            head.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        return text[end.upperBound...].utf8.count >= length
    }
}

/// When things happened on a raw connection, by its event loop's clock.
private final class Timeline: Sendable {
    private struct Times {
        var lastRead: NIODeadline?
        var opened: NIODeadline?
        var reference: NIODeadline?
        var closed: NIODeadline?
        var gaveUp = false
        var stateAtGiveUp: String?
    }

    private let times = Mutex(Times())

    func opened() { times.withLock { $0.opened = $0.opened ?? .now() } }
    func read() { times.withLock { $0.lastRead = .now() } }
    /// The connection ended: the first of its reset and its `channelInactive` counts.
    func closed() { times.withLock { $0.closed = $0.closed ?? .now() } }

    /// Sets, and returns, the moment the server's deadline is measured from: now, when something was just written (on
    /// the event loop), else the last byte read, or the opening when nothing was read. The connect may return before the
    /// event loop has handled `channelActive`: then the opening is now, a moment after the connection really opened.
    func markReference(written: Bool) -> NIODeadline {
        times.withLock { times in
            let reference = written ? .now() : times.lastRead ?? times.opened ?? .now()
            times.reference = reference
            return reference
        }
    }

    /// When the connection closed, if it has.
    var closedAt: NIODeadline? { times.withLock { $0.closed } }

    /// Marks the wait as given up, unless the connection has closed already: `true` when the caller should close it.
    /// `state` (what the kernel said of the connection then) is evaluated only when the wait gives up.
    func giveUpUnlessClosed(state: @autoclosure () -> String) -> Bool {
        guard times.withLock({ $0.closed == nil }) else { return false }
        let state = state()
        return times.withLock { times in
            guard times.closed == nil else { return false }
            times.gaveUp = true
            times.stateAtGiveUp = state
            return true
        }
    }

    /// What the kernel said of the connection when the wait gave up.
    var stateAtGiveUp: String? { times.withLock { $0.stateAtGiveUp } }

    /// How long after the reference the server closed the connection; `nil` when it did not before the wait gave up.
    var closedAfterReference: Duration? {
        times.withLock { times in
            guard !times.gaveUp, let closed = times.closed, let reference = times.reference else { return nil }
            // A close may be handled before the write's completion on the loop: that counts as at once.
            return .nanoseconds(max(0, Int64(closed.uptimeNanoseconds) - Int64(reference.uptimeNanoseconds)))
        }
    }
}

/// A timer on each of the process's event loops, all due at one moment: how late the latest ran says how far a busy
/// process delays a timer due then, the server's among them.
private struct TimerProbes {
    let due: NIODeadline
    let timers: [Scheduled<NIODeadline>]

    init(due: NIODeadline) {
        self.due = due
        timers = MultiThreadedEventLoopGroup.singleton.makeIterator().map { loop in
            loop.scheduleTask(deadline: due) { NIODeadline.now() }
        }
    }

    /// How late the latest timer ran; zero when the connection closed before they were due, or not at all.
    func lateness(closedAt: NIODeadline?) async -> Duration {
        guard let closedAt, closedAt >= due else {
            for timer in timers { timer.cancel() }
            return .zero
        }
        var latest = due
        for timer in timers {
            if let ran = try? await timer.futureResult.get() { latest = max(latest, ran) }
        }
        return .nanoseconds(Int64(latest.uptimeNanoseconds - due.uptimeNanoseconds))
    }
}

/// The longest any of this process's event loops, or its concurrency pool, went without running its jobs, from the
/// watch's start until ``stop()``: each loop, and a task on the pool, runs a tick every 50 ms, and a tick that comes
/// later than that says it was held up for the difference (a test process too busy to run them: its server accepts,
/// finishes answers, and arms deadlines, late by as much).
private final class LoopStalls: Sendable {
    private static let interval = TimeAmount.milliseconds(50)
    private let longest = Mutex<Int64>(0)
    private let ticks = Mutex<[RepeatedTask]>([])
    private let pool = Mutex<Task<Void, Never>?>(nil)

    init() {
        // The concurrency pool too: in process, the server's handlers run there, and a pool kept busy by other tests
        // finishes an answer late, and with it the moment the server reads the next request and arms its deadline.
        let task = Task.detached { [weak self] in
            let interval = Duration.nanoseconds(Self.interval.nanoseconds)
            var last = ContinuousClock.now
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                let now = ContinuousClock.now
                self?.held((now - last - interval).nanoseconds)
                last = now
            }
        }
        pool.withLock { $0 = task }
        let started = MultiThreadedEventLoopGroup.singleton.makeIterator().map { loop in
            let last = Mutex(NIODeadline.now())
            return loop.scheduleRepeatedTask(initialDelay: Self.interval, delay: Self.interval) { [weak self] _ in
                let now = NIODeadline.now()
                self?.held(
                    last.withLock { previous in
                        defer { previous = now }
                        return (now - previous - Self.interval).nanoseconds
                    }
                )
            }
        }
        ticks.withLock { $0 = started }
    }

    /// A tick came `nanoseconds` later than its interval (nothing when it came on time).
    private func held(_ nanoseconds: Int64) {
        if nanoseconds > 0 { longest.withLock { $0 = max($0, nanoseconds) } }
    }

    /// Stops the ticks; the longest stall seen.
    func stop() -> Duration {
        for tick in ticks.withLock({ $0 }) { tick.cancel() }
        pool.withLock { $0?.cancel() }
        return .nanoseconds(longest.withLock { $0 })
    }
}

/// Records a connection's opening, reads and closing on its event loop.
private final class TimelineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let timeline: Timeline

    init(timeline: Timeline) {
        self.timeline = timeline
    }

    /// The bootstrap may add this handler once the connection is up already, and then `channelActive` never comes.
    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { timeline.opened() }
    }

    func channelActive(context: ChannelHandlerContext) {
        timeline.opened()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        timeline.read()
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timeline.closed()
        context.fireChannelInactive()
    }

    /// A reset (or a failed write) ends the connection here: NIO passes the error along the pipeline first and closes
    /// the channel after, and the stream's reader, on another thread, may already have seen the error and read the
    /// timeline before `channelInactive` came (in CI: a dripped body's close, a reset since a drip was still unread
    /// when the server closed, was read as no close at all).
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        timeline.closed()
        context.fireErrorCaught(error)
    }
}

/// The server did something a raw exchange did not expect.
public struct RawHTTPError: Error, CustomStringConvertible {
    /// What happened.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
