import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// One TLS handshake with a server and nothing after it, with a deadline on the connection and another on the
/// handshake: what `notifications doctor` learns the server's TLS versions and certificate from.
struct TLSHandshakeProbe: Sendable {
    /// What a completed handshake showed.
    struct Handshake: Sendable {
        /// The version the server chose.
        let version: TLSVersion?
        /// The server's own certificate.
        let certificate: PeerCertificate?
    }

    /// Why a handshake did not complete.
    enum Failure: Error {
        /// No connection: the reason, e.g. `connection refused`.
        case unreachable(String)
        /// Connected, but the handshake did not end within the deadline.
        case timedOut
        /// The handshake failed: the server refused it, or this side refused the server's certificate.
        case refused(any Error)
        /// This machine's TLS library refused the configuration.
        case setUp(any Error)
    }

    /// The server's host name or IP address.
    let host: String
    /// The server's port.
    let port: Int
    /// The name sent in SNI and checked against the certificate; `nil` for an IP address (NIOSSL then checks the
    /// certificate against the address connected to).
    let serverName: String?
    /// The deadline of the connection, and then of the handshake.
    let limit: TimeAmount

    /// Connects, makes a handshake with `configuration`, and closes the connection.
    func handshake(_ configuration: TLSConfiguration) async throws(Failure) -> Handshake {
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            throw .setUp(error)
        }
        let serverName = self.serverName
        let connected: Connected
        do {
            connected = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(limit)
                .connect(host: host, port: port) { channel in
                    // Happy eyeballs may open several channels: each has its own promise, completed whatever becomes
                    // of it, and only the one that connects is returned.
                    channel.eventLoop.makeCompletedFuture {
                        let promise = channel.eventLoop.makePromise(of: Handshake.self)
                        do {
                            let tls = try NIOSSLClientHandler(context: context, serverHostname: serverName)
                            try channel.pipeline.syncOperations.addHandler(tls)
                            try channel.pipeline.syncOperations.addHandler(HandshakeWatcher(tls: tls, promise: promise))
                        } catch {
                            promise.fail(error)
                            throw error
                        }
                        return Connected(channel: channel, promise: promise)
                    }
                }
        } catch {
            throw .unreachable(Self.describe(connectionError: error))
        }
        let deadline = connected.channel.eventLoop.scheduleTask(in: limit) { connected.promise.fail(TimedOut()) }
        defer {
            deadline.cancel()
            connected.channel.close(promise: nil)
        }
        do {
            return try await connected.promise.futureResult.get()
        } catch is TimedOut {
            throw .timedOut
        } catch {
            throw .refused(error)
        }
    }

    /// A connection error in a few words: `connection refused`, `no connection within 5 s`, `cannot resolve HOST`.
    static func describe(connectionError error: any Error) -> String {
        if let error = error as? ChannelError, case .connectTimeout(let limit) = error {
            return "no connection within \(limit.nanoseconds / 1_000_000_000) s"
        }
        if let error = error as? NIOConnectionError {
            guard !error.connectionErrors.isEmpty else { return "cannot resolve \(error.host)" }
            // One reason per address tried (IPv6 and IPv4), each said once.
            var reasons: [String] = []
            for failure in error.connectionErrors {
                let reason = describe(connectionError: failure.error)
                if !reasons.contains(reason) { reasons.append(reason) }
            }
            return reasons.joined(separator: "; ")
        }
        if let error = error as? IOError {
            // "connect(descriptor:addr:size:): Connection refused) (errno: 111)": the words between the last colon and
            // the errno.
            let text = error.description.components(separatedBy: " (errno").first ?? error.description
            let reason = text.range(of: ": ", options: .backwards).map { String(text[$0.upperBound...]) } ?? text
            return reason.trimmingCharacters(in: CharacterSet(charactersIn: ") ")).lowercased()
        }
        return String(describing: error)
    }

    /// The channel that connected, and the promise its handshake completes.
    private struct Connected: Sendable {
        let channel: any Channel
        let promise: EventLoopPromise<Handshake>
    }

    /// The handshake's deadline passed.
    private struct TimedOut: Error {}

    /// The connection closed before the handshake completed.
    struct Closed: Error, CustomStringConvertible {
        var description: String { "the server closed the connection during the handshake" }
    }
}

/// Completes the promise when the TLS handshake ends: with the version and the server's certificate, or with the error
/// that ended it, or when the connection closes or is torn down first.
private final class HandshakeWatcher: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let tls: NIOSSLHandler
    private let promise: EventLoopPromise<TLSHandshakeProbe.Handshake>

    init(tls: NIOSSLHandler, promise: EventLoopPromise<TLSHandshakeProbe.Handshake>) {
        self.tls = tls
        self.promise = promise
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            promise.succeed(
                TLSHandshakeProbe.Handshake(version: tls.tlsVersion, certificate: tls.peerCertificate.map { PeerCertificate($0) })
            )
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The first error is the reason (a failed handshake, a refused certificate); later ones follow from it.
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(TLSHandshakeProbe.Closed())
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // A channel that never connected (the other address family lost the race) ends here: its promise too.
        promise.fail(TLSHandshakeProbe.Closed())
    }
}
