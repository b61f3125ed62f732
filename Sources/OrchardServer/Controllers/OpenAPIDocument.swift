import Foundation

/// The OpenAPI document served at `GET /openapi.yaml`: `openapi.yaml` in `orchard_OrchardServer.resources`, the
/// directory SwiftPM builds beside the binary (the deployment examples copy it there too).
///
/// Looked up without SwiftPM's `Bundle.module`, which stops the process when the directory is missing: a binary
/// installed without it answers `404 not_found` for the document and says so in the log at start-up.
enum OpenAPIDocument {
    /// The document, or `nil` when it is not installed beside the binary.
    static let bytes: Data? = {
        var directories = [Bundle.main.bundleURL]
        if Bundle.main.bundleURL.pathExtension == "xctest" { directories.append(Bundle.main.bundleURL.deletingLastPathComponent()) }
        if let executable = Bundle.main.executableURL { directories.append(executable.deletingLastPathComponent()) }
        for directory in directories {
            let file = directory.appendingPathComponent("orchard_OrchardServer.resources").appendingPathComponent("openapi.yaml")
            if let data = try? Data(contentsOf: file) { return data }
        }
        return nil
    }()

    /// Where the document was looked for, for the log.
    static var expectedLocation: String {
        Bundle.main.bundleURL.appendingPathComponent("orchard_OrchardServer.resources").appendingPathComponent("openapi.yaml").path
    }
}
