import Foundation
public import NIOCore

/// Conversions of Swift's `Duration` to the time types of Foundation, NIO, Dispatch and swift-metrics: the one place
/// where a duration's components are added up.
extension Duration {
    /// The duration in seconds, for `Date` arithmetic.
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in whole nanoseconds (a metrics timer's unit, a Dispatch deadline's).
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The duration as a NIO `TimeAmount` (for AsyncHTTPClient deadlines and event-loop timers).
    public var timeAmount: TimeAmount { .nanoseconds(nanoseconds) }
}
