public import HTTPTypes
import Synchronization

/// The paths Orchard serves and the methods each accepts, so that a known path with the wrong method answers `405`
/// rather than Hummingbird's `404`.
///
/// ``ProblemMiddleware`` holds the table from the start and ``OrchardRoutes`` fills it as the controllers add their
/// routes (middleware must be added to a Hummingbird router before the routes it wraps). Paths are compared by their
/// segments as Hummingbird's router compares them: empty segments do not count, and `{name}` matches any one segment.
public final class RouteTable: Sendable {
    private struct Entry {
        var segments: [Substring]
        var methods: [HTTPRequest.Method]
    }

    private let entries = Mutex([Entry]())

    /// Creates an empty table.
    public init() {}

    /// Records that `path` (`/v1/sessions/{id}`) accepts `method`.
    public func add(_ method: HTTPRequest.Method, _ path: String) {
        let segments = Self.segments(path)
        entries.withLock { entries in
            if let index = entries.firstIndex(where: { $0.segments == segments }) {
                entries[index].methods.append(method)
            } else {
                entries.append(Entry(segments: segments, methods: [method]))
            }
        }
    }

    /// The methods a request's `path` accepts, or `nil` for a path no route matches.
    public func allowedMethods(for path: String) -> [HTTPRequest.Method]? {
        let requested = Self.segments(path)
        return entries.withLock { entries in
            entries.first { Self.matches(template: $0.segments, requested) }?.methods
        }
    }

    private static func segments(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    private static func matches(template: [Substring], _ requested: [Substring]) -> Bool {
        guard template.count == requested.count else { return false }
        return zip(template, requested).allSatisfy { pattern, segment in
            (pattern.hasPrefix("{") && pattern.hasSuffix("}")) || pattern.hasPrefix(":") || pattern == segment
        }
    }
}
