public import Foundation
import NIOHTTP1

extension OrchardClient {
    /// The sum of a counter's series at `/metrics` whose labels contain `matching` (all of them when empty).
    public func counter(_ name: String, matching: String = "") async throws -> Int {
        let metrics = String(decoding: try await request(.GET, "/metrics").body, as: UTF8.self)
        return metrics.split(separator: "\n")
            .filter { ($0.hasPrefix(name + "{") || $0.hasPrefix(name + " ")) && (matching.isEmpty || $0.contains(matching)) }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .reduce(0) { $0 + Int($1) }
    }

    /// How many passes of the job `kind` the server has finished, from `orchard_job_passes_total` at `/metrics`.
    public func jobPasses(_ kind: String) async throws -> Int {
        try await counter("orchard_job_passes_total", matching: "kind=\"\(kind)\"")
    }

    /// Checks the session of `token` until this replica answers it from memory (`orchard_session_cache_hits_total`
    /// grows with a check): once it has warmed up. `false` when it did not within `timeout` seconds.
    public func warmSessionCache(token: String, timeout: TimeInterval = 30) async -> Bool {
        await eventually(timeout: timeout) {
            guard let before = try? await counter("orchard_session_cache_hits_total"),
                (try? await request(.GET, "/v1/session", bearer: token))?.status == 200,
                let after = try? await counter("orchard_session_cache_hits_total")
            else { return false }
            return after > before
        }
    }

    /// Waits until a process's worker has run two more whole passes of `kind` than now: the second began after this
    /// call, so whatever was due then has been claimed. The way a test of a `serve` process shows that nothing more
    /// happens, without waiting for time. `false` when they did not come within `timeout` seconds.
    public func waitForJobPasses(_ kind: String, timeout: TimeInterval = 90) async -> Bool {
        let start = (try? await jobPasses(kind)) ?? 0
        return await eventually(timeout: timeout) { ((try? await jobPasses(kind)) ?? 0) >= start + 2 }
    }
}
