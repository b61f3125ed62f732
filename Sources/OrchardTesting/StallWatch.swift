import Foundation
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A diagnosis for tests that fail on time: with `ORCHARD_TEST_STALL_DUMP=DIR` set, a thread of its own checks four
/// times a second that each of NIO's event loops and Swift's concurrency pool run a job within a second, and when one
/// does not, writes every thread's stack (through `gdb`) to a file in DIR, once per stall. Without the variable it does
/// nothing.
public enum StallWatch {
    private static let started: Void = {
        guard let directory = ProcessInfo.processInfo.environment["ORCHARD_TEST_STALL_DUMP"], !directory.isEmpty else { return }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let thread = Thread { watch(writingTo: directory) }
        thread.name = "orchard.stall-watch"
        thread.start()
    }()

    /// Starts the watch (once per process) when the variable asks for it.
    public static func start() { _ = started }

    private static func watch(writingTo directory: String) {
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        var stalled = false
        while true {
            usleep(250_000)
            let ran = Mutex<Set<String>>([])
            for (index, loop) in loops.enumerated() {
                loop.execute { _ = ran.withLock { $0.insert("event loop \(index)") } }
            }
            Task.detached { _ = ran.withLock { $0.insert("concurrency pool") } }
            let expected = Set(loops.indices.map { "event loop \($0)" } + ["concurrency pool"])
            let deadline = Date().addingTimeInterval(1)
            while Date() < deadline, ran.withLock({ $0 }) != expected { usleep(10_000) }
            let late = expected.subtracting(ran.withLock { $0 })
            if late.isEmpty {
                stalled = false
                continue
            }
            guard !stalled else { continue }
            stalled = true
            dump(late: late.sorted(), to: directory)
        }
    }

    private static func dump(late: [String], to directory: String) {
        let stamp = ISO8601DateFormatter().string(from: Date())
        let file = "\(directory)/stall-\(getpid())-\(stamp).txt"
        let header = "\(stamp): not run within 1 s: \(late.joined(separator: ", "))\n"
        _ = FileManager.default.createFile(atPath: file, contents: Data(header.utf8))
        guard let handle = FileHandle(forWritingAtPath: file) else { return }
        handle.seekToEndOfFile()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gdb")
        process.arguments = ["-p", "\(getpid())", "-batch", "-ex", "thread apply all bt 40"]
        process.standardOutput = handle
        process.standardError = handle
        try? ChildProcess.start(process)
        process.waitUntilExit()
        try? handle.close()
    }
}
