public import ServiceLifecycle
import Synchronization

/// Which of `serve`'s services are still running, by name, so that a shutdown past its limit can say which held it up
/// (`shutdown did not finish in time`, with `shutdown.still_running`, the names joined by commas). Each service is
/// entered as it starts and left as it ends, however it ends; the names are Orchard's own, never a service's
/// description (which may reach what it holds).
public final class ServiceRoster: Sendable {
    private let running = Mutex<[String: Int]>([:])

    /// An empty roster.
    public init() {}

    /// `service`, entered under `name` while it runs.
    public func track(_ service: any Service, as name: String) -> any Service {
        RosteredService(service: service, name: name, roster: self)
    }

    /// The names of the services running now, sorted (a name twice when two of that name run).
    public var stillRunning: [String] {
        running.withLock { running in running.flatMap { name, count in Array(repeating: name, count: count) } }.sorted()
    }

    fileprivate func enter(_ name: String) {
        running.withLock { $0[name, default: 0] += 1 }
    }

    fileprivate func leave(_ name: String) {
        running.withLock { running in
            let left = running[name, default: 1] - 1
            running[name] = left > 0 ? left : nil
        }
    }
}

/// A service run under a roster's name; it describes itself by that name only.
private struct RosteredService: Service, CustomStringConvertible {
    let service: any Service
    let name: String
    let roster: ServiceRoster

    var description: String { name }

    func run() async throws {
        roster.enter(name)
        defer { roster.leave(name) }
        try await service.run()
    }
}
