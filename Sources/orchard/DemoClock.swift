import AppleID
import Foundation
import Synchronization

/// The demo's wall clock: the machine's time plus an offset the script moves forward ("a day later"), shared by Orchard
/// and the emulator so that both see the same day.
final class DemoClock: WallClock {
    private let offset = Mutex<TimeInterval>(0)

    /// The machine's time, moved ahead by every ``advance(by:)`` so far.
    func now() -> Date { Date().addingTimeInterval(offset.withLock { $0 }) }

    /// Moves the clock ahead by `seconds`.
    func advance(by seconds: TimeInterval) {
        offset.withLock { $0 += seconds }
    }
}
