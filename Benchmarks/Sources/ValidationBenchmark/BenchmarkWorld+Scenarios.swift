import Accounts
import AppleIDEmulator
import Logging
import OrchardTesting
import SQLKit
import Storage

extension BenchmarkWorld {
    /// Makes `count` accounts not validated yet due, at instants spread over the past hour; returns how many.
    func makeDue(count: Int) async throws -> Int {
        let now = AccountLoader.milliseconds(clock.now())
        return try await database.withDatabase { db in
            try await db.raw(
                """
                UPDATE accounts SET next_validation_at = \(bind: now) - 1 - abs(random()) % 3600000
                WHERE id IN (
                    SELECT id FROM accounts WHERE last_validated_at < \(bind: now) ORDER BY id LIMIT \(bind: count)
                )
                RETURNING id
                """
            ).all().count
        }
    }

    /// How many accounts were validated at the clock's instant.
    func validatedCount() async throws -> Int {
        let now = AccountLoader.milliseconds(clock.now())
        return try await database.withDatabase { db in
            try await db.raw("SELECT COUNT(*) AS n FROM accounts WHERE last_validated_at = \(bind: now)").first()?
                .decode(column: "n", as: Int.self) ?? 0
        }
    }

    /// How many accounts there are.
    func accountCount() async throws -> Int {
        try await database.withDatabase { db in
            try await db.raw("SELECT COUNT(*) AS n FROM accounts").first()?.decode(column: "n", as: Int.self) ?? 0
        }
    }

    /// Runs passes of `validateDue(limit:)` back to back, as the `refresh-validation` worker does, until one
    /// claims fewer than `batch` accounts; measures them.
    ///
    /// The peak resident set is reset before the passes (so the caller reads the process's peak so far first).
    func runDue(_ scenario: DueScenario, batch: Int, logger: Logger) async throws -> DueScenarioResult {
        emulator.setLatency(scenario.latency)
        let before = try await validatedCount()
        let made = try await makeDue(count: scenario.due)
        emulator.clearCalls()
        let residentBefore = ResourceUsage.residentBytes()
        ResourceUsage.resetPeakResident()
        let cpuStart = ResourceUsage.now()
        let clock = ContinuousClock()
        let start = clock.now
        var passes = Samples()
        while true {
            let passStart = clock.now
            let claimed = await scenario.lifecycle.validateDue(limit: batch, logger: logger)
            passes.append(clock.now - passStart)
            if claimed < batch { break }
        }
        let wall = clock.now - start
        let cpu = ResourceUsage.now().since(cpuStart)
        let peak = ResourceUsage.peakResidentBytes()
        let calls = emulator.calls(to: .token)
        return DueScenarioResult(
            name: scenario.name,
            population: try await accountCount(),
            due: made,
            validated: try await validatedCount() - before,
            appleSuccesses: calls.filter { $0.status == 200 }.count,
            appleFailures: calls.filter { $0.status != 200 }.count,
            latency: scenario.latency,
            connections: scenario.connections,
            passes: passes,
            wall: wall,
            cpu: cpu,
            peakResident: peak,
            residentBefore: residentBefore
        )
    }

    /// Times `count` passes when nothing is due (after a few untimed ones).
    func measureIdleTicks(count: Int, batch: Int, logger: Logger) async throws -> Samples {
        for _ in 0..<5 {
            _ = await accounts.validateDue(limit: batch, logger: logger)
        }
        let clock = ContinuousClock()
        var samples = Samples()
        for _ in 0..<count {
            let start = clock.now
            let claimed = await accounts.validateDue(limit: batch, logger: logger)
            samples.append(clock.now - start)
            precondition(claimed == 0, "an idle tick claimed \(claimed) accounts")
        }
        return samples
    }

    /// Times the claim's `SELECT` with the index forbidden (`NOT INDEXED`): what a tick would cost if it scanned.
    func measureUnindexedClaim(count: Int, batch: Int) async throws -> Samples {
        let now = AccountLoader.milliseconds(clock.now())
        let clock = ContinuousClock()
        var samples = Samples()
        for _ in 0..<count {
            let start = clock.now
            _ = try await database.withDatabase { db in
                try await db.raw(
                    """
                    SELECT id FROM accounts NOT INDEXED
                    WHERE next_validation_at <= \(bind: now) AND apple_credential = 'valid' AND sealed_refresh_token IS NOT NULL
                    ORDER BY next_validation_at LIMIT \(bind: batch)
                    """
                ).all()
            }
            samples.append(clock.now - start)
        }
        return samples
    }

    /// SQLite's plan for the claim's `SELECT` and for the backlog count, one line per step.
    func claimPlans() async throws -> [String] {
        let now = AccountLoader.milliseconds(clock.now())
        return try await database.withDatabase { db in
            var lines: [String] = []
            let claim = try await db.raw(
                """
                EXPLAIN QUERY PLAN SELECT id FROM accounts
                WHERE next_validation_at <= \(bind: now) AND apple_credential = 'valid' AND sealed_refresh_token IS NOT NULL
                ORDER BY next_validation_at LIMIT 64
                """
            ).all()
            lines += try claim.map { "claim: " + (try $0.decode(column: "detail", as: String.self)) }
            let backlog = try await db.raw(
                """
                EXPLAIN QUERY PLAN SELECT COUNT(*) AS n, MIN(next_validation_at) AS oldest FROM accounts
                WHERE next_validation_at <= \(bind: now)
                """
            ).all()
            lines += try backlog.map { "backlog: " + (try $0.decode(column: "detail", as: String.self)) }
            return lines
        }
    }
}
