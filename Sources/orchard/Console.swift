import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Unbuffered output, so lines appear at once even when standard output is a pipe (scripts wait for them).
enum Console {
    /// Writes one line to standard output.
    static func line(_ text: String = "") {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// Writes text to standard error as it is.
    static func error(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}

/// The progress of a long command on standard error: a bar redrawn in place on a terminal, else a plain line at every
/// tenth of the way (and at the end), so logs of scripted runs stay readable.
struct ProgressReport {
    /// What is being counted, e.g. `accounts`.
    let unit: String
    private let isTerminal = isatty(STDERR_FILENO) == 1

    /// A report counting `unit`.
    init(unit: String) {
        self.unit = unit
    }

    /// Shows that `done` of `total` are done.
    func update(done: Int, total: Int) {
        if isTerminal {
            guard done == total || done % 10 == 0 else { return }
            let width = 30
            let filled = total == 0 ? width : width * done / total
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            Console.error("\r[\(bar)] \(done)/\(total) \(unit)" + (done == total ? "\n" : ""))
        } else {
            let step = max(1, total / 10)
            guard done == total || done % step == 0 else { return }
            Console.error("\(done)/\(total) \(unit)\n")
        }
    }
}
