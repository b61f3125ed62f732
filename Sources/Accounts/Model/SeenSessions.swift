import Foundation
import Synchronization

/// The minute of each session's last `last_seen_at` write this process made or tried, so that it tries at most once a
/// minute per session whatever the database answers: a session answered from a replica's memory, whose remembered
/// `last_seen_at` lags, or a database that refuses writes, never turns every check into a write.
final class SeenSessions: Sendable {
    /// Sessions remembered at most; past it the memory starts over (a session then costs one more write attempt).
    let capacity: Int
    private let minutes = Mutex<[String: Date]>([:])

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// Whether the session `tokenHash` is to be written for `minute`: `true` once per session and minute.
    func claim(_ tokenHash: String, minute: Date) -> Bool {
        minutes.withLock { minutes in
            if let claimed = minutes[tokenHash], claimed >= minute { return false }
            if minutes.count >= capacity { minutes.removeAll(keepingCapacity: true) }
            minutes[tokenHash] = minute
            return true
        }
    }
}
