import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's CPU time and memory, from `getrusage` and (on Linux) `/proc/self`.
///
/// Figures are for the whole process: Orchard's lifecycle and the emulator run in it together.
struct ResourceUsage: Sendable {
    /// CPU seconds spent in user space.
    var userSeconds: Double
    /// CPU seconds spent in the kernel.
    var systemSeconds: Double

    /// CPU seconds in all.
    var cpuSeconds: Double { userSeconds + systemSeconds }

    /// The usage so far.
    static func now() -> ResourceUsage {
        var usage = rusage()
        getrusage(who, &usage)
        return ResourceUsage(userSeconds: seconds(usage.ru_utime), systemSeconds: seconds(usage.ru_stime))
    }

    /// The CPU time spent between `earlier` and this usage.
    func since(_ earlier: ResourceUsage) -> ResourceUsage {
        ResourceUsage(userSeconds: userSeconds - earlier.userSeconds, systemSeconds: systemSeconds - earlier.systemSeconds)
    }

    /// The process's peak resident set (`ru_maxrss`), in bytes; on Linux, ``resetPeakResident()`` resets it too.
    static func peakResidentBytesSinceStart() -> Int {
        var usage = rusage()
        getrusage(who, &usage)
        #if os(Linux)
        return Int(usage.ru_maxrss) * 1024
        #else
        return Int(usage.ru_maxrss)
        #endif
    }

    /// The resident set now (`VmRSS`), in bytes; nil where `/proc` is missing.
    static func residentBytes() -> Int? {
        procStatus("VmRSS")
    }

    /// The peak resident set since the last ``resetPeakResident()`` (`VmHWM`), in bytes; nil where `/proc` is missing.
    static func peakResidentBytes() -> Int? {
        procStatus("VmHWM")
    }

    /// Starts a new peak: Linux resets `VmHWM` to the current resident set when `5` is written to `clear_refs`.
    @discardableResult
    static func resetPeakResident() -> Bool {
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? handle.close() }
        return (try? handle.write(contentsOf: Data("5".utf8))) != nil
    }

    /// The machine's 1, 5 and 15 minute load averages (`/proc/loadavg`), e.g. `1.02 0.87 0.55`; nil elsewhere.
    static func loadAverage() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return nil }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    #if os(Linux)
    private static let who = Int32(RUSAGE_SELF.rawValue)
    #else
    private static let who = RUSAGE_SELF
    #endif

    private static func procStatus(_ field: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            return kilobytes.map { $0 * 1024 }
        }
        return nil
    }

    private static func seconds(_ time: timeval) -> Double {
        Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000
    }
}
