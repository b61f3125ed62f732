public import Foundation
import NIOHTTP1

extension OrchardClient {
    /// How many passes of the job `kind` the server has finished, from `orchard_job_passes_total` at `/metrics`.
    public func jobPasses(_ kind: String) async throws -> Int {
        let metrics = String(decoding: try await request(.GET, "/metrics").body, as: UTF8.self)
        return metrics.split(separator: "\n")
            .filter { $0.hasPrefix("orchard_job_passes_total{") && $0.contains("kind=\"\(kind)\"") }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .reduce(0) { $0 + Int($1) }
    }

    /// Waits until a process's worker has run two more whole passes of `kind` than now: the second began after this
    /// call, so whatever was due then has been claimed. The way a test of a `serve` process shows that nothing more
    /// happens, without waiting for time. `false` when they did not come within `timeout` seconds.
    public func waitForJobPasses(_ kind: String, timeout: TimeInterval = 90) async -> Bool {
        let start = (try? await jobPasses(kind)) ?? 0
        return await eventually(timeout: timeout) { ((try? await jobPasses(kind)) ?? 0) >= start + 2 }
    }
}
