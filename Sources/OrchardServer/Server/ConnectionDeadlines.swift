import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// The contract's bounds on slow and idle clients, so that a client cannot hold connections open without sending:
/// a new connection completes its TLS handshake (with built-in TLS) and its first request head within
/// ``headTimeout`` of opening; a later request's head is complete within ``headTimeout`` of its first byte; a request's
/// body (at most 64 KiB) is complete within ``bodyTimeout`` of its head; a keep-alive connection with no request in
/// progress is closed after ``idleTimeout``.
struct ConnectionDeadlines: Sendable {
    /// For a request head (and, on a new connection, the TLS handshake before it).
    var headTimeout: Duration = .seconds(10)
    /// For a request's body, from its head: a body sent a byte at a time would otherwise hold the connection for good.
    var bodyTimeout: Duration = .seconds(10)
    /// For a kept-alive connection with no request in progress.
    var idleTimeout: Duration = .seconds(60)

    /// Wraps `inner` so that every connection it sets up is held to the head and body deadlines.
    func guarding<Inner: ServerChildChannel>(_ inner: Inner) -> some ServerChildChannel {
        HeadDeadlineChildChannel(
            inner: inner,
            timeouts: .init(head: TimeAmount(headTimeout), body: TimeAmount(bodyTimeout), idle: TimeAmount(idleTimeout))
        )
    }

    /// HTTP/1.1 with the watcher after its codec, and Hummingbird's idle timeout as well as the watcher's own: a CI run
    /// under load once saw Hummingbird's (new in 2.28) leave an idle connection open past 80 s while every event loop
    /// ran on time, so the bound no longer rests on it alone.
    var http1Configuration: HTTP1Channel.Configuration {
        HTTP1Channel.Configuration(additionalChannelHandlers: watchers(), idleTimeout: TimeAmount(idleTimeout))
    }

    /// The handlers that tell a connection's ``HeadDeadlineHandler`` when heads arrive and responses end; one per HTTP/1
    /// connection, or per HTTP/2 stream.
    func watchers() -> [any RemovableChannelHandler] {
        [RequestHeadWatcher()]
    }
}

/// Adds a ``HeadDeadlineHandler`` at the front of each connection's pipeline before `inner` sets it up.
private struct HeadDeadlineChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    let inner: Inner
    let timeouts: HeadDeadlineHandler.Timeouts

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Inner.Value> {
        do {
            let handler = HeadDeadlineHandler(timeouts, logger: logger)
            try channel.pipeline.syncOperations.addHandler(handler, position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Inner.Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Sits in front of everything (TLS included) and closes the connection when a request is not read in time: the first
/// head within the head timeout of opening (which covers the TLS handshake), a later one within the head timeout of its
/// first byte, and each body within the body timeout of its head; and when nothing is in progress for the idle timeout.
/// ``RequestHeadWatcher`` says when heads and ends arrive and when every request has been answered; over HTTP/2 the
/// connection's own idle timeout takes over once the first stream opens.
final class HeadDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private enum Phase {
        /// A head is due: the timer runs.
        case awaitingHead
        /// A head arrived and its body is due: the timer runs.
        case readingBody
        /// Every request read is being answered; `bytesArrived` once the next one has begun.
        case answering(bytesArrived: Bool)
        /// Nothing in progress: the idle timer runs.
        case idle
        /// HTTP/2: its own timeouts apply.
        case multiplexed
    }

    /// How long a head, a body, and a connection with nothing in progress may take.
    struct Timeouts: Sendable {
        var head: TimeAmount
        var body: TimeAmount
        var idle: TimeAmount
    }

    private let timeouts: Timeouts
    /// The shortest of the timeouts: the one timer is never due further ahead than this (see ``timer``).
    private let step: TimeAmount
    private let logger: Logger
    private var phase = Phase.awaitingHead
    private var context: ChannelHandlerContext?
    /// When the connection is closed unless the phase moves on first; `nil` while nothing is due.
    private var deadline: NIODeadline?
    /// One timer per connection, scheduled no further ahead than ``step`` and never after ``deadline``: a deadline set
    /// later is at least a step from its moment, so never before the pending timer, which then need not move. When it
    /// fires before the deadline it is scheduled again, towards it. A request thus sets and clears deadlines without
    /// scheduling or cancelling anything (three of each per request cost the session check 6 % of serve's CPU).
    private var timer: Scheduled<Void>?
    /// When the connection became active here, and when the current deadline was set: a close is logged (at debug) with
    /// both, so that a close later than its deadline says whether the connection was taken up late or its timer ran late.
    private var openedAt: NIODeadline?
    private var armedAt: NIODeadline?

    init(_ timeouts: Timeouts, logger: Logger) {
        self.timeouts = timeouts
        self.step = min(timeouts.head, timeouts.body, timeouts.idle)
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive {
            openedAt = .now()
            arm(timeouts.head)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        openedAt = openedAt ?? .now()
        if case .awaitingHead = phase { arm(timeouts.head) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch phase {
        case .idle:
            disarm()
            phase = .awaitingHead
            arm(timeouts.head)
        case .answering:
            phase = .answering(bytesArrived: true)
        case .awaitingHead, .readingBody, .multiplexed:
            break
        }
        context.fireChannelRead(data)
    }

    /// A request head is complete: its body is due.
    func headReceived() {
        guard !isMultiplexed else { return }
        disarm()
        phase = .readingBody
        arm(timeouts.body)
    }

    /// A request has been read whole.
    func requestEnded() {
        guard !isMultiplexed else { return }
        disarm()
        phase = .answering(bytesArrived: false)
    }

    /// Every request read so far has been answered: a head that has begun meanwhile is due now, else the next byte
    /// starts one's deadline.
    func becameIdle() {
        switch phase {
        case .answering(bytesArrived: true):
            phase = .awaitingHead
            arm(timeouts.head)
        case .answering(bytesArrived: false), .awaitingHead, .readingBody:
            if case .readingBody = phase { logger.debug("a request was answered before its body had arrived: the idle deadline runs") }
            disarm()
            phase = .idle
            arm(timeouts.idle)
        case .idle, .multiplexed:
            break
        }
    }

    /// The bytes of a request arrived right behind the end of the one before, in the same read
    /// (``RequestBoundaryHandler``): its head is due from now, once the requests before it are answered.
    func nextRequestBegan() {
        switch phase {
        case .answering:
            phase = .answering(bytesArrived: true)
        case .idle:
            disarm()
            phase = .awaitingHead
            arm(timeouts.head)
        case .awaitingHead, .readingBody, .multiplexed:
            break
        }
    }

    /// The connection speaks HTTP/2: its streams are watched by HTTP/2's own idle timeout.
    func multiplexed() {
        disarm()
        phase = .multiplexed
    }

    private var isMultiplexed: Bool {
        if case .multiplexed = phase { return true }
        return false
    }

    /// Sets the deadline `timeout` from now, unless one is set already.
    private func arm(_ timeout: TimeAmount) {
        guard deadline == nil, context != nil else { return }
        let now = NIODeadline.now()
        armedAt = now
        deadline = now + timeout
        if timer == nil { schedule(from: now) }
    }

    /// Clears the deadline; the pending timer, if any, finds none when it fires.
    private func disarm() {
        deadline = nil
    }

    /// Clears the deadline and cancels the timer: the connection has gone.
    private func stop() {
        deadline = nil
        timer?.cancel()
        timer = nil
    }

    /// Schedules the timer for the deadline, or a step from `now` when the deadline is further.
    private func schedule(from now: NIODeadline) {
        guard let deadline, let context else { return }
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: min(deadline, now + step)) { [weak self] in
            self?.timerFired()
        }
    }

    private func timerFired() {
        timer = nil
        guard let deadline, let context else { return }
        let now = NIODeadline.now()
        guard now >= deadline else { return schedule(from: now) }
        switch phase {
        case .awaitingHead, .readingBody, .idle:
            logClose()
            context.close(promise: nil)
        case .answering, .multiplexed: break
        }
    }

    /// Says, at debug, which deadline closed the connection, how long after the connection opened here and after the
    /// timer was armed (the difference from the client's own count is how late this process took the connection up).
    private func logClose() {
        let now = NIODeadline.now()
        func seconds(since moment: NIODeadline?) -> Logger.MetadataValue {
            moment.map { "\(Double((now - $0).nanoseconds) / 1e9)" } ?? "unknown"
        }
        let deadline =
            switch phase {
            case .awaitingHead: "head"
            case .readingBody: "body"
            default: "idle"
            }
        logger.debug(
            "closed a connection: its \(deadline) deadline passed",
            metadata: ["connection.open_seconds": seconds(since: openedAt), "deadline.armed_seconds": seconds(since: armedAt)]
        )
    }
}

/// Tells the connection's ``HeadDeadlineHandler`` when a request's head and end have arrived and when every request
/// read has been answered. It sits after the HTTP/1 codec (of the connection, or of an HTTP/2 stream, whose connection it then marks
/// as multiplexed).
final class RequestHeadWatcher: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var deadline: HeadDeadlineHandler?
    private var inFlight = 0

    func handlerAdded(context: ChannelHandlerContext) {
        if let own = try? context.pipeline.syncOperations.handler(type: HeadDeadlineHandler.self) {
            deadline = own
            // Before the HTTP/1 decoder, which says nothing of a head it has only begun.
            if let decoder = try? context.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self) {
                try? context.pipeline.syncOperations.addHandler(RequestBoundaryHandler(deadline: own), position: .before(decoder))
            }
        } else if let connection = context.channel.parent, connection.eventLoop.inEventLoop {
            // An HTTP/2 stream: the connection's handler is in its parent's pipeline, on the same event loop.
            (try? connection.pipeline.syncOperations.handler(type: HeadDeadlineHandler.self))?.multiplexed()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            inFlight += 1
            deadline?.headReceived()
        case .end:
            deadline?.requestEnded()
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), inFlight > 0 {
            inFlight -= 1
            if inFlight == 0 { deadline?.becameIdle() }
        }
        context.write(data, promise: promise)
    }
}
