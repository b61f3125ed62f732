public import AppleID
import Foundation
import Synchronization

/// One token bucket per key (a client's address for the anonymous routes, a session for the signed-in ones that end
/// sessions or mint tokens), in memory (limits are per replica): `limit` requests per minute, refilled continuously,
/// with a burst of the same size.
///
/// A bucket that has refilled completely is the same as no bucket, so such buckets are dropped from time to time:
/// the table holds only the keys seen in the last minute, whatever number of addresses or tokens a flood comes from.
public final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    private struct State {
        var buckets: [Key: Bucket] = [:]
        var insertsSincePrune = 0
    }

    /// Requests per minute per key (and the burst).
    public let limit: Int
    private let clock: any WallClock
    private let state = Mutex(State())
    private var perSecond: Double { Double(limit) / 60 }

    /// Creates the limiter.
    ///
    /// - Parameters:
    ///   - limit: Requests per minute per key, and the burst; must be positive.
    ///   - clock: The time refills are measured with.
    public init(limit: Int, clock: any WallClock) {
        precondition(limit > 0, "a rate limit of 0 is no limiter at all")
        self.limit = limit
        self.clock = clock
    }

    /// Takes one token from `client`'s bucket: `nil` when the request may go on, else the whole seconds until the bucket
    /// holds a token again (at least 1), for `Retry-After`.
    public func acquire(_ client: Key) -> Int? {
        let now = clock.now()
        let capacity = Double(limit)
        let rate = perSecond
        return state.withLock { state in
            var bucket = state.buckets[client] ?? Bucket(tokens: capacity, updated: now)
            if state.buckets[client] == nil {
                state.insertsSincePrune += 1
                if state.insertsSincePrune >= 1024 { Self.prune(&state, now: now, capacity: capacity, rate: rate) }
            }
            let elapsed = max(0, now.timeIntervalSince(bucket.updated))
            bucket.tokens = min(capacity, bucket.tokens + elapsed * rate)
            bucket.updated = now
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                state.buckets[client] = bucket
                return nil
            }
            state.buckets[client] = bucket
            return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
        }
    }

    /// Whether `client`'s bucket is empty, without taking from it: `nil` when a token is there, else the whole seconds
    /// until one is (for `Retry-After`).
    public func exhausted(_ client: Key) -> Int? {
        let now = clock.now()
        let rate = perSecond
        return state.withLock { state in
            guard let bucket = state.buckets[client] else { return nil }
            let tokens = min(Double(limit), bucket.tokens + max(0, now.timeIntervalSince(bucket.updated)) * rate)
            return tokens >= 1 ? nil : max(1, Int(((1 - tokens) / rate).rounded(.up)))
        }
    }

    private static func prune(_ state: inout State, now: Date, capacity: Double, rate: Double) {
        state.insertsSincePrune = 0
        state.buckets = state.buckets.filter { _, bucket in
            bucket.tokens + max(0, now.timeIntervalSince(bucket.updated)) * rate < capacity
        }
    }
}
