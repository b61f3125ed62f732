import Dispatch
public import Foundation

/// Runs the built `orchard` executable as a user would, with only the environment a test gives it.
public struct OrchardProcess: Sendable {
    /// What a run printed and how it ended.
    public struct Result: Sendable {
        /// The exit status.
        public let status: Int32
        /// Standard output.
        public let standardOutput: String
        /// Standard error.
        public let standardError: String
    }

    /// The path of the `orchard` executable next to the test bundle.
    public static var executable: URL {
        var directory = Bundle.main.bundleURL
        if directory.pathExtension == "xctest" { directory = directory.deletingLastPathComponent() }
        let candidate = directory.appendingPathComponent("orchard")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("orchard")
    }

    /// Runs `orchard ARGUMENTS` and waits for it without holding a thread of Swift's concurrency pool: the wait happens
    /// on a Dispatch thread. Use it when the command talks to something this test process serves (the emulator, a
    /// webhook receiver): the pool has one thread per core, and a blocking wait on each would leave none to answer.
    public static func runInBackground(
        _ arguments: [String],
        environment: [String: String] = [:],
        standardInput: String? = nil,
        timeout: TimeInterval = 60
    ) async throws -> Result {
        try await offThePool { try run(arguments, environment: environment, standardInput: standardInput, timeout: timeout) }
    }

    /// Runs `orchard ARGUMENTS` and waits for it (at most `timeout` seconds, then it is killed).
    public static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        standardInput: String? = nil,
        timeout: TimeInterval = 60
    ) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var env = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory()]
        env.merge(environment) { $1 }
        process.environment = env
        let output = Pipe()
        let error = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = input
        try ChildProcess.start(process)
        if let standardInput { input.fileHandleForWriting.write(Data(standardInput.utf8)) }
        try input.fileHandleForWriting.close()
        let watchdog = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        return Result(
            status: process.terminationStatus,
            standardOutput: String(decoding: outData, as: UTF8.self),
            standardError: String(decoding: errData, as: UTF8.self)
        )
    }
}
