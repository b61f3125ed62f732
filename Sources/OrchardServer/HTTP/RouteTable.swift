public import HTTPTypes
import Synchronization

/// The paths Orchard serves and the methods each accepts, so that a known path with the wrong method answers `405`
/// rather than Hummingbird's `404`; and which of them authenticate with the session, for the cookie rules.
///
/// Middleware must be added to a Hummingbird router before the routes it wraps, so the table is shared: the
/// ``ProblemMiddleware`` and the ``CookieSessionMiddleware`` hold it from the start and the controllers fill it as they
/// add their routes.
public final class RouteTable: Sendable {
    private struct Entries {
        var methods: [String: [HTTPRequest.Method]] = [:]
        var sessionRoutes: Set<String> = []
    }

    private let entries = Mutex(Entries())

    /// Creates an empty table.
    public init() {}

    /// Records that `path` accepts `method`; `session` when the route authenticates with the session (bearer or
    /// cookie), so that the cookie rules (CSRF, `Clear-Site-Data`) apply to it.
    public func add(_ method: HTTPRequest.Method, _ path: String, session: Bool = false) {
        entries.withLock {
            $0.methods[path, default: []].append(method)
            if session { $0.sessionRoutes.insert("\(method.rawValue) \(path)") }
        }
    }

    /// The methods `path` accepts, or `nil` for an unknown path.
    public func allowedMethods(for path: String) -> [HTTPRequest.Method]? {
        let normalized = Self.normalize(path)
        return entries.withLock { $0.methods[normalized] }
    }

    /// Whether `method` on `path` authenticates with the session.
    public func authenticatesSession(_ method: HTTPRequest.Method, _ path: String) -> Bool {
        let key = "\(method.rawValue) \(Self.normalize(path))"
        return entries.withLock { $0.sessionRoutes.contains(key) }
    }

    private static func normalize(_ path: String) -> String {
        var normalized = path
        while normalized.count > 1 && normalized.hasSuffix("/") { normalized.removeLast() }
        return normalized
    }
}
