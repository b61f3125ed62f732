import NIOCore
import NIOPosix
import Synchronization

/// A TCP forwarder on a loopback port that can be made to stop answering: in front of a database, it plays a
/// PostgreSQL that hangs (the connections stay open, queries go unanswered), which a real cluster shared by the
/// whole test run cannot be made to do.
public final class StallingTCPProxy: Sendable {
    /// The port it listens on.
    public let port: Int
    private let stalled: Atomic<Bool>
    private let held: Atomic<Int>
    private let task: Mutex<Task<Void, Never>?>

    private init(port: Int) {
        self.port = port
        self.stalled = Atomic(false)
        self.held = Atomic(0)
        self.task = Mutex(nil)
    }

    /// Starts forwarding `127.0.0.1:port` (a free one) to `host:targetPort`.
    public static func start(to host: String, port targetPort: Int) async throws -> StallingTCPProxy {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        guard let port = server.channel.localAddress?.port else { throw StallingTCPProxyError() }
        let proxy = StallingTCPProxy(port: port)
        proxy.task.withLock {
            $0 = Task {
                try? await server.executeThenClose { connections in
                    try await withThrowingDiscardingTaskGroup { group in
                        for try await connection in connections {
                            group.addTask { try? await proxy.forward(connection, to: host, port: targetPort) }
                        }
                    }
                }
            }
        }
        return proxy
    }

    /// From now on nothing passes in either direction; connections, open and new, stay open.
    public func stall() {
        stalled.store(true, ordering: .sequentiallyConsistent)
    }

    /// The bytes clients sent since ``stall()``, which never reached the target: above 0 once a query waits for an answer
    /// that will not come.
    public var heldBytes: Int { held.load(ordering: .sequentiallyConsistent) }

    /// Closes the listener and every connection.
    public func stop() async {
        let task = self.task.withLock { $0 }
        task?.cancel()
        await task?.value
    }

    private func forward(_ client: NIOAsyncChannel<ByteBuffer, ByteBuffer>, to host: String, port: Int) async throws {
        let upstream = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await client.executeThenClose { clientIn, clientOut in
            try await upstream.executeThenClose { upstreamIn, upstreamOut in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await self.copy(clientIn, to: upstreamOut, countingHeld: true) }
                    group.addTask { try await self.copy(upstreamIn, to: clientOut, countingHeld: false) }
                    // Either side closing ends both.
                    try await group.next()
                    group.cancelAll()
                }
            }
        }
    }

    private func copy(
        _ from: NIOAsyncChannelInboundStream<ByteBuffer>,
        to: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        countingHeld: Bool
    ) async throws {
        for try await bytes in from {
            if stalled.load(ordering: .sequentiallyConsistent) {
                if countingHeld { held.add(bytes.readableBytes, ordering: .sequentiallyConsistent) }
            } else {
                try await to.write(bytes)
            }
        }
    }
}

/// The proxy's listener has no port.
public struct StallingTCPProxyError: Error {}
