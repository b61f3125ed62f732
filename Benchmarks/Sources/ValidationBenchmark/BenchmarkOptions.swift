/// The benchmark's settings, read from the command line (`--name value`).
struct BenchmarkOptions: Sendable {
    /// The account counts at which the idle tick is measured; the largest is the population for the due scenarios.
    var tiers = [1_000, 10_000, 100_000]
    /// How many accounts fall due in the main scenario.
    var due = 1_000
    /// How many accounts fall due in the large scenario; 0 skips it.
    var largeDue = 10_000
    /// The emulator's delay before it answers, standing in for Apple's real latency.
    var latencyMilliseconds = 150
    /// How many idle ticks are timed at each tier.
    var ticks = 50
    /// The claim limit of one pass, as the `refresh-validation` worker uses it.
    var batch = 64
    /// The HTTP client's connections per host in the wide-pool scenario; 0 skips it.
    var widePool = 16

    /// The usage line printed for `--help` or an unknown option.
    static let usage = """
        usage: ValidationBenchmark [--tiers 1000,10000,100000] [--due 1000] [--large-due 10000] [--latency-ms 150]
                                   [--ticks 50] [--batch 64] [--wide-pool 16]
        """

    /// Parses `arguments` (without the program name); nil when they cannot be used.
    static func parse(_ arguments: [String]) -> BenchmarkOptions? {
        var options = BenchmarkOptions()
        var remaining = arguments[...]
        while let name = remaining.popFirst() {
            guard let value = remaining.popFirst() else { return nil }
            let number = Int(value)
            switch name {
            case "--tiers":
                let tiers = value.split(separator: ",").compactMap { Int($0) }
                guard !tiers.isEmpty, tiers.allSatisfy({ $0 > 0 }) else { return nil }
                options.tiers = tiers.sorted()
            case "--due": options.due = number ?? -1
            case "--large-due": options.largeDue = number ?? -1
            case "--latency-ms": options.latencyMilliseconds = number ?? -1
            case "--ticks": options.ticks = number ?? -1
            case "--batch": options.batch = number ?? -1
            case "--wide-pool": options.widePool = number ?? -1
            default: return nil
            }
        }
        let population = options.tiers.last ?? 0
        let counts = [options.due, options.largeDue, options.latencyMilliseconds, options.widePool]
        guard counts.allSatisfy({ $0 >= 0 }), options.ticks > 0, options.batch > 0 else { return nil }
        // The scenarios take accounts not validated yet, so together they must fit in the population.
        let used = options.due * (options.widePool > 0 ? 3 : 2) + options.largeDue
        guard options.due > 0, used <= population else { return nil }
        return options
    }
}
