public import Foundation

/// A fresh directory under the system's temporary folder, for a test's database files.
public struct TemporaryDirectory: Sendable {
    /// The directory's path.
    public let path: String

    /// Creates the directory. Its name carries the test run's marker (``ChildProcess/runMarker``) when there is one, so
    /// that `scripts/test` also finds what a test left running there when it wrote its title over its environment
    /// (nginx, PostgreSQL).
    public init(prefix: String = "orchard-test") throws {
        let run = ProcessInfo.processInfo.environment[ChildProcess.runMarker].map { "\($0)-" } ?? ""
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(run)\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        self.path = url.path
    }

    /// A path inside the directory.
    public func file(_ name: String) -> String {
        (path as NSString).appendingPathComponent(name)
    }

    /// Every file in the directory, with its contents (for raw-byte scans of database files).
    public func allFileContents() throws -> [(name: String, bytes: Data)] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted().map { name in
            (name, try Data(contentsOf: URL(fileURLWithPath: file(name))))
        }
    }

    /// Removes the directory and everything in it.
    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
