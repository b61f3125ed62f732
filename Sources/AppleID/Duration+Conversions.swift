import Foundation
public import NIOCore

/// Conversions of Swift's `Duration` to the time types of Foundation and NIO.
extension Duration {
    /// The duration in seconds, for `Date` arithmetic.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration as a NIO `TimeAmount` (for AsyncHTTPClient deadlines).
    public var timeAmount: TimeAmount {
        let (seconds, attoseconds) = components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
