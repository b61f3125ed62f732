import Synchronization

/// Wakes the background workers as soon as a request wrote work for them, so it is picked up at once rather than at the
/// next poll.
public final class JobWakeups: Sendable {
    /// The kinds of background work.
    public enum Kind: Sendable, CaseIterable {
        /// The revocation outbox.
        case revocations
        /// The notification inbox.
        case notifications
        /// The webhook outbox.
        case webhooks
        /// Refresh-token validation.
        case validations
    }

    private let continuations: Mutex<[Kind: AsyncStream<Void>.Continuation]> = Mutex([:])
    private let streams: [Kind: AsyncStream<Void>]

    /// Creates the wake-up channels.
    public init() {
        var streams: [Kind: AsyncStream<Void>] = [:]
        var continuations: [Kind: AsyncStream<Void>.Continuation] = [:]
        for kind in Kind.allCases {
            let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            streams[kind] = stream
            continuations[kind] = continuation
        }
        self.streams = streams
        self.continuations.withLock { $0 = continuations }
    }

    /// Says there is new work of a kind.
    public func notify(_ kind: Kind) {
        _ = continuations.withLock { $0[kind] }?.yield()
    }

    /// The wake-ups of one kind (one consumer per kind).
    public func stream(_ kind: Kind) -> AsyncStream<Void> {
        streams[kind]!
    }
}
