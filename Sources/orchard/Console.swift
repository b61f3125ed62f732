import Foundation

/// Unbuffered output, so lines appear at once even when standard output is a pipe (scripts wait for them).
enum Console {
    /// Writes one line to standard output.
    static func line(_ text: String = "") {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}
