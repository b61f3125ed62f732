import Foundation

/// Reading Linux's `/proc` files whole.
enum ProcFS {
    /// The whole text of `path`. `String(contentsOfFile:)` trusts the size `stat` gives, and a `/proc` file says 0:
    /// it then returns the first page only (about 27 lines of `/proc/net/tcp`, whose connections follow its listeners).
    static func text(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        // `nil` from `readToEnd` is an empty file; an error reads as empty too.
        return String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
    }
}
