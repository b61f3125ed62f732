import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// The contract's bounds on slow and idle clients, so that a client cannot hold connections open without sending:
/// a new connection completes its TLS handshake (with built-in TLS) and its first request head within
/// ``headTimeout`` of opening; a later request's head is complete within ``headTimeout`` of its first byte; a
/// keep-alive connection with no request in progress is closed after ``idleTimeout``.
struct ConnectionDeadlines: Sendable {
    /// For a request head (and, on a new connection, the TLS handshake before it).
    var headTimeout: Duration = .seconds(10)
    /// For a kept-alive connection with no request in progress.
    var idleTimeout: Duration = .seconds(60)

    /// Wraps `inner` so that every connection it sets up is held to the head deadline.
    func guarding<Inner: ServerChildChannel>(_ inner: Inner) -> some ServerChildChannel {
        HeadDeadlineChildChannel(inner: inner, headTimeout: TimeAmount(headTimeout))
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
    let headTimeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Inner.Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(HeadDeadlineHandler(timeout: headTimeout), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Inner.Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Sits in front of everything (TLS included) and closes the connection when a request head is not complete in time:
/// the first within the timeout of opening (which covers the TLS handshake), a later one within the timeout of the
/// first byte that follows an idle spell. ``RequestHeadWatcher`` says when heads arrive and when the connection is
/// idle; over HTTP/2 the connection's own idle timeout takes over once the first stream opens.
final class HeadDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private enum Phase {
        case awaitingHead
        case inRequest
        case idle
        case multiplexed
    }

    private let timeout: TimeAmount
    private var phase = Phase.awaitingHead
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { arm() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        arm()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if phase == .idle {
            phase = .awaitingHead
            arm()
        }
        context.fireChannelRead(data)
    }

    /// A request head is complete.
    func headReceived() {
        guard phase != .multiplexed else { return }
        disarm()
        phase = .inRequest
    }

    /// Every request read so far has been answered: the next byte starts a new head's deadline.
    func becameIdle() {
        guard phase != .multiplexed else { return }
        disarm()
        phase = .idle
    }

    /// The connection speaks HTTP/2: its streams are watched by HTTP/2's own idle timeout.
    func multiplexed() {
        disarm()
        phase = .multiplexed
    }

    private func arm() {
        guard timer == nil, let context else { return }
        let loop = context.eventLoop.assumeIsolated()
        timer = loop.scheduleTask(in: timeout) { [weak self] in
            guard let self, let context = self.context else { return }
            self.timer = nil
            if self.phase == .awaitingHead { context.close(promise: nil) }
        }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }
}

/// Tells the connection's ``HeadDeadlineHandler`` when a request head has arrived and when every request read has been
/// answered. It sits after the HTTP/1 codec (of the connection, or of an HTTP/2 stream, whose connection it then marks
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
        } else if let connection = context.channel.parent, connection.eventLoop.inEventLoop {
            // An HTTP/2 stream: the connection's handler is in its parent's pipeline, on the same event loop.
            (try? connection.pipeline.syncOperations.handler(type: HeadDeadlineHandler.self))?.multiplexed()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            inFlight += 1
            deadline?.headReceived()
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
