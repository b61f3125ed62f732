import Foundation

/// Durations measured repeatedly, with the figures the report prints.
struct Samples: Sendable {
    /// Every measured duration, in the order taken.
    private(set) var values: [Duration] = []

    /// Adds one duration.
    mutating func append(_ duration: Duration) {
        values.append(duration)
    }

    /// How many durations were taken.
    var count: Int { values.count }

    /// The median.
    var median: Duration { percentile(0.5) }

    /// The longest.
    var maximum: Duration { values.max() ?? .zero }

    /// The sum.
    var total: Duration { values.reduce(.zero, +) }

    /// The nearest-rank percentile, `fraction` in 0...1.
    func percentile(_ fraction: Double) -> Duration {
        guard !values.isEmpty else { return .zero }
        let sorted = values.sorted()
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}

extension Duration {
    /// The duration in seconds.
    var inSeconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// The duration in milliseconds, with two decimals, e.g. `0.41 ms`.
    var formattedMilliseconds: String {
        decimal(inSeconds * 1000, places: 2) + " ms"
    }
}

/// `value` with `places` decimals, e.g. `decimal(1.234, places: 2)` is `1.23`.
func decimal(_ value: Double, places: Int) -> String {
    String(format: "%.\(places)f", value)
}

/// A byte count in MiB, e.g. `182.4 MiB`.
func formattedMiB(_ bytes: Int?) -> String {
    guard let bytes else { return "n/a" }
    return decimal(Double(bytes) / 1_048_576, places: 1) + " MiB"
}
