import MetricsTestKit

extension OrchardHarness {
    /// How far Orchard counted `label` with these dimensions (every counter whose dimensions include them); 0 when it
    /// never did.
    public func counted(_ label: String, _ dimensions: [(String, String)] = []) -> Int64 {
        metrics.counterTotal(label: label, dimensions: dimensions)
    }

    /// The values Orchard recorded into gauge `label` (with these dimensions), oldest first; empty when it never did.
    public func gaugeValues(_ label: String, _ dimensions: [(String, String)] = []) -> [Double] {
        (try? metrics.expectGauge(label, dimensions).values) ?? []
    }

    /// The values Orchard recorded into timer `label` with these dimensions, in nanoseconds; empty when it never did.
    public func timerValues(_ label: String, _ dimensions: [(String, String)]) -> [Int64] {
        (try? metrics.expectTimer(label, dimensions).values) ?? []
    }
}
