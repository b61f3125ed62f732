import Foundation
import Logging
import SQLKit
import ServiceLifecycle
import Synchronization

/// The sessions whose `last_seen_at` is to be written, each with the minute to write, and the wake-up of their writer.
///
/// A session is queued once per minute: the queue also knows which sessions it wrote (or is writing) this minute, so a
/// check that read the session before its write committed does not queue it again. That record starts over each minute,
/// so it never holds more than the sessions checked in one minute.
final class SeenWrites: Sendable {
    private struct State {
        var pending: [String: Date] = [:]
        /// The minute ``taken`` is for.
        var minute: Date?
        /// Sessions taken for writing in ``minute``.
        var taken: Set<String> = []
    }

    private let state = Mutex(State())
    private let wake: AsyncStream<Void>.Continuation
    let wakeups: AsyncStream<Void>

    init() {
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues `minute` for the session `tokenHash`, unless it is queued or was taken for that minute or a later one, and
    /// wakes the writer.
    func add(_ tokenHash: String, minute: Date) {
        let queued = state.withLock { state -> Bool in
            if let pending = state.pending[tokenHash], pending >= minute { return false }
            if let taken = state.minute, taken >= minute, state.taken.contains(tokenHash) { return false }
            state.pending[tokenHash] = minute
            return true
        }
        if queued { wake.yield() }
    }

    /// Everything queued, taken out of the queue (and remembered as taken for its minute).
    func take() -> [String: Date] {
        state.withLock { state in
            let pending = state.pending
            state.pending.removeAll(keepingCapacity: true)
            for (tokenHash, minute) in pending {
                if state.minute.map({ minute > $0 }) ?? true {
                    state.minute = minute
                    state.taken.removeAll(keepingCapacity: true)
                }
                if minute == state.minute { state.taken.insert(tokenHash) }
            }
            return pending
        }
    }
}

/// Writes the sessions' `last_seen_at` that the checks queued (``SessionKeeper/noteSeen(tokenHash:minute:)``): a service
/// of the server's service group, which writes what is queued whenever a check queues something, in one statement per
/// minute for every session waiting, and once more when it stops. Best effort: a write the database refuses is dropped
/// (the session's next check in a later minute queues it again), and no check ever waits for one.
struct SeenWriter: Service, CustomStringConvertible {
    let keeper: SessionKeeper

    var description: String { "SeenWriter" }

    func run() async throws {
        for await _ in keeper.seen.wakeups.cancelOnGracefulShutdown() {
            await flush()
        }
        await flush()
    }

    /// Writes what is queued now.
    func flush() async {
        let queued = keeper.seen.take()
        guard !queued.isEmpty else { return }
        let byMinute = Dictionary(grouping: queued, by: \.value).mapValues { $0.map(\.key) }
        do {
            try await keeper.database.transaction { db in
                for (minute, tokenHashes) in byMinute {
                    try await db.raw(
                        """
                        UPDATE sessions SET last_seen_at = \(bind: minute.milliseconds)
                        WHERE token_hash IN (\(binds: tokenHashes))
                            AND (last_seen_at IS NULL OR last_seen_at < \(bind: minute.milliseconds))
                        """
                    ).run()
                }
            }
        } catch {
            keeper.logger.debug("the sessions' last_seen_at could not be written", metadata: ["sessions": "\(queued.count)"])
        }
    }
}
