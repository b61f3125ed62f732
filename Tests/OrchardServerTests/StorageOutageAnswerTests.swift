import Accounts
import Foundation
import HTTPTypes
import InMemoryLogging
import Logging
import NIOCore
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Storage
import Testing

@Suite("Storage outages: the answer names no engine, the log says why, once per interval")
struct StorageOutageAnswerTests {
    @Test("a storage_unavailable problem carries a fixed detail and keeps the driver's reason for the log only")
    func problemHidesTheReason() throws {
        let reason = "the database is unavailable: SQLite: SQLITE_BUSY (5) database is locked"
        let problem = OrchardProblem(AccountsError(.storageUnavailable, reason))
        #expect(problem.status == .serviceUnavailable)
        #expect(problem.code == .lifecycle(.storageUnavailable))
        #expect(problem.detail == OrchardProblem.storageUnavailableDetail)
        #expect(problem.logReason == reason)
        let body = String(decoding: try EncodedProblemBodies(capacity: 4).body(of: problem).readableBytesView, as: UTF8.self)
        #expect(!body.contains("SQLite") && !body.contains("locked"), "\(body)")

        let bug = OrchardProblem(AccountsError(.internalError, "unexpected storage error: GRDB.DatabaseError"))
        #expect(bug.detail == OrchardProblem.internalError.detail)
        #expect(bug.logReason == "unexpected storage error: GRDB.DatabaseError")

        // A client's own fault keeps its detail, which is meant for the client, and has nothing more to log.
        let refused = OrchardProblem(AccountsError(.nonceMismatch, "the token's nonce was not issued by Orchard"))
        #expect(refused.detail == "the token's nonce was not issued by Orchard")
        #expect(refused.logReason == nil)
    }

    @Test("storage outages are logged at once, then at most once per interval with the count left unlogged; bugs every time")
    func outageLinesAreSpaced() {
        let memory = InMemoryLogHandler()
        let logger = Logger(label: "test.problems") { _ in memory }
        let clock = TestWallClock()
        let log = ProblemLog(clock: clock, interval: .seconds(10))
        let outage = OrchardProblem(AccountsError(.storageUnavailable, "PostgreSQL: 57P01"))
        func outageLines() -> [InMemoryLogHandler.Entry] { memory.entries.filter { $0.message.description.hasPrefix("storage unavailable") } }

        for _ in 0..<5 { log.record(outage, logger: logger) }
        #expect(outageLines().count == 1)
        #expect(outageLines().first?.level == .warning)
        #expect(outageLines().first?.metadata["error.reason"] == "PostgreSQL: 57P01")
        #expect(outageLines().first?.metadata["storage.unlogged_failures"] == "0")

        clock.advance(by: 9.9)
        log.record(outage, logger: logger)
        #expect(outageLines().count == 1, "within the interval")

        clock.advance(by: 0.1)
        log.record(outage, logger: logger)
        #expect(outageLines().count == 2)
        #expect(outageLines().last?.metadata["storage.unlogged_failures"] == "5", "four of the first burst and one within the interval")

        let bug = OrchardProblem(AccountsError(.internalError, "an invariant broke"))
        log.record(bug, logger: logger)
        log.record(bug, logger: logger)
        #expect(memory.entries.filter { $0.message.description == "internal error" && $0.level == .error }.count == 2)

        let before = memory.entries.count
        log.record(OrchardProblem(AccountsError(.nonceMismatch, "not issued")), logger: logger)
        log.record(.payloadTooLarge, logger: logger)
        #expect(memory.entries.count == before, "a client's fault is not logged here")
    }

    @Test(
        "a write while another process holds SQLite's lock: 503 storage_unavailable without SQLite's words; the log has them",
        .enabled(if: TestDatabase.selectedBackend == .sqlite, "the lock is SQLite's")
    )
    func lockedSQLiteAnswer() async throws {
        try await OrchardHarness.with { h in
            guard case .sqlite(path: let path) = h.testDatabase.url else { throw LockHolderError() }
            let holder = try SQLiteLockHolder(path: path)
            defer { holder.release() }
            try await offThePool { try holder.waitUntilLocked() }

            // Orchard's writer waits its 5 s busy timeout for the lock, then gives up.
            let firstWrite = ContinuousClock.now
            let refused = try await h.request(.POST, "/v1/auth/apple/nonce")
            #expect(refused.status == 503)
            #expect(refused.code == "storage_unavailable")
            #expect(refused["detail"] == OrchardProblem.storageUnavailableDetail)
            let body = String(decoding: refused.body, as: UTF8.self)
            #expect(!body.contains("SQLite") && !body.contains("locked") && !body.contains(path), "\(body)")
            let logged = h.loggedLines.filter { $0.contains("storage unavailable") }
            #expect(logged.count == 1)
            #expect(logged.first?.contains("SQLite") == true, "\(logged)")
            // A second write fails too, after the busy timeout (and after any job kind's claim queued before it). The
            // harness's clock does not move, so its 503 is not logged again.
            #expect(try await h.request(.POST, "/v1/auth/apple/nonce").code == "storage_unavailable")
            #expect(h.loggedLines.filter { $0.contains("storage unavailable") }.count == 1)

            holder.release()
            let recovered = await eventually { (try? await h.request(.POST, "/v1/auth/apple/nonce"))?.status == 201 }
            #expect(recovered, "writes go again once the lock is released")
            let failures = ContinuousClock.now - firstWrite
            // The writer failed at least the two nonces' groups, and logs the first failure and then at most one line
            // per 10 s by the real clock, each saying how many went unlogged before it; the first commit after says how
            // many failed in all. Every failure fell between `firstWrite` and now, so the rule allows at most
            // 1 + failures/10 lines, however slowly this machine ran them.
            let again = h.logs.entries.first { $0.message.description == "SQLite group commits succeed again" }
            let failedCount = again?.metadata["sqlite.failed_groups"].flatMap { Int($0.description) } ?? 0
            let failedGroups = h.logs.entries.filter { $0.message.description.contains("an SQLite group commit failed") }
            #expect(failedCount >= 2, "\(h.loggedLines.suffix(20))")
            #expect(!failedGroups.isEmpty, "\(h.loggedLines.suffix(20))")
            #expect(failedGroups.count <= 1 + Int(failures / .seconds(10)), "\(failedGroups.count) lines in \(failures)")
            let unlogged = failedGroups.compactMap { $0.metadata["sqlite.unlogged_failures"].flatMap { Int($0.description) } }
            #expect(unlogged.count == failedGroups.count, "each line says how many failures went unlogged before it")
            #expect(failedGroups.count + unlogged.reduce(0, +) <= failedCount, "no failure is counted twice")
        }
    }
}

/// The lock holder did not start, or the test database is not SQLite.
private struct LockHolderError: Error {}

/// Another process (python3's sqlite3) holding an exclusive lock on an SQLite file until released.
private final class SQLiteLockHolder: @unchecked Sendable {
    // Process is not Sendable; the test starts, waits for and ends the holder one step after another.
    private let process: Process
    private let output: Pipe
    private let input: Pipe

    init(path: String) throws {
        let script = """
            import sqlite3, sys, time
            db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
            db.execute("BEGIN EXCLUSIVE")
            print("locked", flush=True)
            sys.stdin.read()
            """
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, path]
        output = Pipe()
        input = Pipe()
        process.standardOutput = output
        // The holder keeps the lock until its standard input closes: on release, or when the test process ends.
        process.standardInput = input
        try ChildProcess.start(process)
    }

    /// Blocks until the holder says it has the lock.
    func waitUntilLocked() throws {
        let line = output.fileHandleForReading.readData(ofLength: 7)
        guard String(decoding: line, as: UTF8.self) == "locked\n" else { throw LockHolderError() }
    }

    /// Ends the holder, which releases the lock; waits for it to exit.
    func release() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
