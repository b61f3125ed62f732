public import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// How every test starts a process (servers, nginx, Python helpers, `orchard` commands): the way a shell would start
/// it, with no signal blocked and every signal's disposition the default, and marked as this test run's.
///
/// Foundation's `Process` passes on the spawning thread's signal mask and the ignored signals, and the threads that
/// run tests (libdispatch's and the concurrency pool's) block almost every signal, SIGTERM among them: a child started
/// from one never receives the `terminate()` meant to end it, and outlives its test. So the spawn runs on a thread of
/// its own whose mask is empty, through `env --default-signal`, which resets every disposition before it execs the
/// program (the child keeps its pid). Each child also gets `ORCHARD_TEST_RUN` (the run's marker, when `scripts/test`
/// set one), so that the script can find anything a test left running, and is ended when the test process exits.
public enum ChildProcess {
    /// The environment variable that marks the processes of one test run.
    public static let runMarker = "ORCHARD_TEST_RUN"

    /// The processes started and not yet seen to exit, ended at the test process's exit.
    private static let started = Mutex<[Int32: Process]>([:])
    private static let cleanupAtExit: Void = {
        atexit {
            for process in ChildProcess.started.withLock({ Array($0.values) }) where process.isRunning {
                kill(process.processIdentifier, SIGKILL)
            }
        }
    }()

    /// Starts `process` (its executable, arguments, environment and standard streams set) with a clean signal state.
    ///
    /// - Throws: what `Process.run()` throws (an executable that does not exist).
    public static func start(_ process: Process) throws {
        _ = cleanupAtExit
        guard let executable = process.executableURL else { throw ChildProcessError("no executable set") }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["--default-signal", "--", executable.path] + (process.arguments ?? [])
        var environment = process.environment ?? ProcessInfo.processInfo.environment
        if let marker = ProcessInfo.processInfo.environment[runMarker] { environment[runMarker] = marker }
        process.environment = environment
        if process.terminationHandler == nil { process.terminationHandler = { forget($0) } }

        let outcome = Mutex<Result<Void, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let box = UncheckedProcess(process)
        let thread = Thread {
            var none = sigset_t()
            sigemptyset(&none)
            pthread_sigmask(SIG_SETMASK, &none, nil)
            let result = Result { try box.process.run() }
            outcome.withLock { $0 = result }
            done.signal()
        }
        thread.start()
        done.wait()
        try outcome.withLock { $0 }?.get()
        started.withLock { $0[process.processIdentifier] = process }
    }

    /// Ends `process`: SIGTERM, and SIGKILL when it has not exited within `grace`; returns once it has exited. Waits on a
    /// thread of its own, not the concurrency pool's.
    public static func end(_ process: Process, grace: TimeInterval = 5) async {
        let box = UncheckedProcess(process)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                let process = box.process
                if process.isRunning { kill(process.processIdentifier, SIGTERM) }
                let deadline = Date().addingTimeInterval(grace)
                while process.isRunning, Date() < deadline { usleep(20_000) }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
                continuation.resume()
            }
        }
        forget(process)
    }

    /// Interrupts `process` (SIGINT, as Ctrl-C would) and returns its exit status once it has exited, waiting on a thread
    /// of its own: a graceful shutdown can take seconds, and a concurrency-pool thread blocked that long stalls every
    /// other test of the process.
    public static func interruptAndWait(_ process: Process) async -> Int32 {
        let box = UncheckedProcess(process)
        let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            DispatchQueue.global().async {
                let process = box.process
                if process.isRunning { process.interrupt() }
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus)
            }
        }
        forget(process)
        return status
    }

    /// The same, for a `defer` or any other place that cannot wait: blocks the calling thread until the process exited.
    public static func endNow(_ process: Process, grace: TimeInterval = 5) {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        forget(process)
    }

    /// The process has exited: nothing to end at the test process's exit.
    public static func forget(_ process: Process) {
        _ = started.withLock { $0.removeValue(forKey: process.processIdentifier) }
    }
}

/// `Process` is not `Sendable`; the spawn and the waits touch it from one thread at a time.
private struct UncheckedProcess: @unchecked Sendable {
    let process: Process
    init(_ process: Process) { self.process = process }
}

/// A process could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}
