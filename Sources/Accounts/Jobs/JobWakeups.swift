import Synchronization

/// Wakes the background workers as soon as a request wrote work for them, so it is picked up at once rather than at the
/// next tick.
///
/// One channel per ``JobKind``, made on first use, keeping at most one pending wake-up: a wake-up sent before the
/// worker listens is not lost, and many in a row cost one pass.
public final class JobWakeups: Sendable {
    private typealias Channel = (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)

    private let channels: Mutex<[JobKind: Channel]> = Mutex([:])

    /// Creates the wake-up channels.
    public init() {}

    /// Says there is new work of a kind.
    public func notify(_ kind: JobKind) {
        channel(kind).continuation.yield()
    }

    /// The wake-ups of one kind (one consumer per kind).
    public func stream(_ kind: JobKind) -> AsyncStream<Void> {
        channel(kind).stream
    }

    private func channel(_ kind: JobKind) -> Channel {
        channels.withLock { channels in
            if let channel = channels[kind] { return channel }
            let channel = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            channels[kind] = channel
            return channel
        }
    }
}
