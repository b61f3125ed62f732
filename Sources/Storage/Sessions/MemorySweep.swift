import ServiceLifecycle

/// Sweeps the session memory once per entry lifetime (``SessionMemory/sweep()``): a service of the server's service
/// group. A session checked once and never again would otherwise stay remembered, with its account opened beside it,
/// until the memory filled up; with the sweep, nothing remembered is older than two lifetimes (2 minutes on SQLite,
/// 2 seconds on PostgreSQL). What is past its lifetime never answers either way: the sweep bounds what is held, not
/// what is answered. It waits on the memory's own clock (``MonotonicClock``), which tests drive.
struct MemorySweep: Service, CustomStringConvertible {
    let memory: SessionMemory

    var description: String { "MemorySweep" }

    func run() async throws {
        let every = memory.timings.entryLifetime
        try? await cancelWhenGracefulShutdown {
            while true {
                try await memory.clock.sleep(for: every)
                memory.sweep()
            }
        }
    }
}
