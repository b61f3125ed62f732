import Accounts
import Foundation
import Logging
import OrchardTesting

/// Measures Orchard's refresh-token validation scheduling against the Apple emulator: the cost of an idle tick as the
/// number of accounts not due grows, and passes over due accounts with Apple's latency. See `Benchmarks/README.md`.
@main
struct ValidationBenchmark {
    /// Runs every scenario and prints the figures.
    static func main() async throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.contains("--help") || arguments.contains("-h") {
            print(BenchmarkOptions.usage)
            return
        }
        guard let options = BenchmarkOptions.parse(arguments) else {
            print(BenchmarkOptions.usage)
            exit(2)
        }
        var logger = Logger(label: "orchard.benchmark")
        logger.logLevel = .warning
        let latency = Duration.milliseconds(options.latencyMilliseconds)
        let world = try await BenchmarkWorld.start(latency: latency, widePool: options.widePool)
        do {
            try await run(options, world: world, logger: logger)
        } catch {
            await world.stop()
            throw error
        }
        await world.stop()
    }

    private static func run(_ options: BenchmarkOptions, world: BenchmarkWorld, logger: Logger) async throws {
        print(
            "ValidationBenchmark: \(ProcessInfo.processInfo.activeProcessorCount) cores, "
                + "load average \(ResourceUsage.loadAverage() ?? "n/a"), database \(world.directory.path)"
        )
        let loader = AccountLoader(
            database: world.database,
            emulator: world.emulator,
            vault: world.vault,
            clientID: BenchmarkWorld.clientID,
            now: world.clock.now()
        )
        let clock = ContinuousClock()

        print("\n== idle ticks: validateDue(limit: \(options.batch)) with nothing due, \(options.ticks) calls per tier ==")
        var loaded = 0
        for tier in options.tiers {
            let cpuStart = ResourceUsage.now()
            let start = clock.now
            try await loader.load(count: tier - loaded)
            let loadTime = clock.now - start
            let loadCPU = ResourceUsage.now().since(cpuStart)
            print(
                "loaded \(tier - loaded) accounts (to \(tier)) in \(decimal(loadTime.inSeconds, places: 2)) s, "
                    + "CPU \(decimal(loadCPU.cpuSeconds, places: 2)) s, RSS \(formattedMiB(ResourceUsage.residentBytes()))"
            )
            loaded = tier
            let ticks = try await world.measureIdleTicks(count: options.ticks, batch: options.batch, logger: logger)
            let scan = try await world.measureUnindexedClaim(count: max(options.ticks / 5, 3), batch: options.batch)
            print(
                "  \(tier) accounts not due: tick median \(ticks.median.formattedMilliseconds), "
                    + "p90 \(ticks.percentile(0.9).formattedMilliseconds), max \(ticks.maximum.formattedMilliseconds); "
                    + "for contrast, the claim's SELECT with NOT INDEXED: median \(scan.median.formattedMilliseconds)"
            )
        }
        for line in try await world.claimPlans() {
            print("  plan \(line)")
        }

        let latency = Duration.milliseconds(options.latencyMilliseconds)
        var scenarios: [DueScenario] = [
            DueScenario(name: "(a) serve's HTTP client", lifecycle: world.accounts, due: options.due, latency: latency, connections: 8)
        ]
        if let wide = world.wideAccounts {
            scenarios.append(
                DueScenario(name: "(a') wider pool", lifecycle: wide, due: options.due, latency: latency, connections: options.widePool)
            )
        }
        if options.largeDue > 0 {
            scenarios.append(
                DueScenario(name: "(c) large backlog", lifecycle: world.accounts, due: options.largeDue, latency: latency, connections: 8)
            )
        }
        scenarios.append(DueScenario(name: "(d) no Apple latency", lifecycle: world.accounts, due: options.due, latency: .zero, connections: 8))

        print("\n== passes of validateDue(limit: \(options.batch)) over due accounts until all are validated ==")
        var results: [DueScenarioResult] = []
        var processPeak = ResourceUsage.peakResidentBytes() ?? 0
        for scenario in scenarios {
            processPeak = max(processPeak, ResourceUsage.peakResidentBytes() ?? 0)
            let result = try await world.runDue(scenario, batch: options.batch, logger: logger)
            print(result.lines.joined(separator: "\n"))
            results.append(result)
        }
        processPeak = max(processPeak, ResourceUsage.peakResidentBytes() ?? ResourceUsage.peakResidentBytesSinceStart())
        print("\npeak RSS of the whole run, loading included: \(formattedMiB(processPeak))")
        print("load average at the end: \(ResourceUsage.loadAverage() ?? "n/a")")
        if results.contains(where: { $0.validated != $0.due || $0.appleFailures > 0 }) {
            print("\nWARNING: some due accounts were not validated, or Apple calls failed; the figures above are not clean")
        }
    }
}
