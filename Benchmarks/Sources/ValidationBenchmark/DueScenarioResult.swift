/// What a due scenario measured: passes of `validateDue` until every due account was validated.
struct DueScenarioResult: Sendable {
    /// The scenario's label in the report.
    var name: String
    /// The accounts in the database.
    var population: Int
    /// How many accounts were due.
    var due: Int
    /// How many of them were validated (`last_validated_at` moved to now).
    var validated: Int
    /// How many `/auth/token` calls the emulator answered with 200.
    var appleSuccesses: Int
    /// How many `/auth/token` calls got another answer, or none (the client gave up first).
    var appleFailures: Int
    /// The emulator's latency.
    var latency: Duration
    /// The HTTP client's connections per host.
    var connections: Int
    /// One duration per pass.
    var passes: Samples
    /// From the first pass's start to the last pass's end.
    var wall: Duration
    /// CPU time of the whole process over the scenario.
    var cpu: ResourceUsage
    /// The peak resident set during the scenario (`VmHWM` after a reset), in bytes.
    var peakResident: Int?
    /// The resident set before the scenario, in bytes.
    var residentBefore: Int?

    /// Validations per second of wall time.
    var throughput: Double { Double(validated) / max(wall.inSeconds, 1e-9) }

    /// The report's lines for this scenario.
    var lines: [String] {
        [
            "\(name): \(due) due of \(population) accounts, Apple latency \(latency.formattedMilliseconds), \(connections) connections/host",
            "  validated \(validated)/\(due); /auth/token 200: \(appleSuccesses), other: \(appleFailures)",
            "  passes: \(passes.count), median \(passes.median.formattedMilliseconds), max \(passes.maximum.formattedMilliseconds)",
            "  wall: \(decimal(wall.inSeconds, places: 2)) s, \(decimal(throughput, places: 1)) validations/s",
            "  CPU: \(decimal(cpu.cpuSeconds, places: 2)) s (user \(decimal(cpu.userSeconds, places: 2)) s, "
                + "system \(decimal(cpu.systemSeconds, places: 2)) s), "
                + "\(decimal(cpu.cpuSeconds / max(wall.inSeconds, 1e-9) * 100, places: 0)) % of one core",
            "  RSS: \(formattedMiB(residentBefore)) before, peak during \(formattedMiB(peakResident))",
        ]
    }
}
