import Foundation
import OrchardTesting
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every process a test starts goes through `ChildProcess`, which starts it as a shell would; these show it does.
@Suite("Processes a test starts", .backendIndependent)
struct ChildProcessTests {
    /// A field of `/proc/PID/status` (`SigBlk`, `SigIgn`), or `nil` once the process is gone.
    static func status(_ pid: Int32, _ field: String) -> String? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix(field + ":") }.map {
            $0.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces)
        }
    }

    @Test("a child started from a thread that blocks SIGTERM has no signal blocked or ignored, and SIGTERM ends it")
    func cleanSignalState() async throws {
        // This process ignores SIGPIPE (as servers do; harmless here, NIO handles a closed peer itself), so that the
        // child's dispositions below show the reset, not merely an inheritance of nothing.
        signal(SIGPIPE, SIG_IGN)
        let own = Self.status(getpid(), "SigIgn").flatMap { UInt64($0, radix: 16) } ?? 0
        #expect(own & (1 << UInt64(SIGPIPE - 1)) != 0, "the test process does not ignore SIGPIPE")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sleep")
        process.arguments = ["60"]
        // Start it from a thread that blocks SIGTERM and SIGINT, as libdispatch's and the concurrency pool's threads do.
        let started = Mutex<Result<Void, any Error>?>(nil)
        let box = ProcessBox(process)
        let thread = Thread {
            var blocked = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGTERM)
            sigaddset(&blocked, SIGINT)
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
            started.withLock { $0 = Result { try ChildProcess.start(box.process) } }
        }
        thread.start()
        #expect(await eventually { started.withLock { $0 } != nil })
        let outcome: Result<Void, any Error>? = started.withLock { $0 }
        try #require(outcome).get()
        defer { ChildProcess.endNow(process) }

        // `env --default-signal` execs the program under the same pid: wait until it is `sleep` itself.
        let pid = process.processIdentifier
        #expect(
            await eventually(timeout: 10) {
                (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.hasPrefix("sleep") == true
            }
        )
        #expect(Self.status(pid, "SigBlk") == "0000000000000000", "blocked signals: \(Self.status(pid, "SigBlk") ?? "?")")
        // Signals 1 to 31 (32 and 33 are glibc's own, which no program can set and a shell leaves as they are).
        let ignored = Self.status(pid, "SigIgn").flatMap { UInt64($0, radix: 16) }
        #expect(ignored.map { $0 & 0x7fff_ffff } == 0, "ignored signals: \(Self.status(pid, "SigIgn") ?? "?")")

        process.terminate()
        #expect(await eventually(timeout: 10) { !process.isRunning }, "SIGTERM did not end the child")
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGTERM)
    }
}

/// `Process` is not `Sendable`; the test hands it to one thread at a time.
private struct ProcessBox: @unchecked Sendable {
    let process: Process
    init(_ process: Process) { self.process = process }
}
