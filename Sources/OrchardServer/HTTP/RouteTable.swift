public import HTTPTypes
import Synchronization

/// The paths Orchard serves and the methods each accepts, so that a known path with the wrong method answers `405`
/// rather than Hummingbird's `404`.
///
/// Middleware must be added to a Hummingbird router before the routes it wraps, so the table is shared: the
/// ``ProblemMiddleware`` holds it from the start and the controllers fill it as they add their routes.
public final class RouteTable: Sendable {
    private let methods = Mutex<[String: [HTTPRequest.Method]]>([:])

    /// Creates an empty table.
    public init() {}

    /// Records that `path` accepts `method`.
    public func add(_ method: HTTPRequest.Method, _ path: String) {
        methods.withLock { $0[path, default: []].append(method) }
    }

    /// The methods `path` accepts, or `nil` for an unknown path.
    public func allowedMethods(for path: String) -> [HTTPRequest.Method]? {
        var normalized = path
        while normalized.count > 1 && normalized.hasSuffix("/") { normalized.removeLast() }
        return methods.withLock { $0[normalized] }
    }
}
