public import HTTPTypes

/// The paths Orchard serves and the methods each accepts, so that a known path with the wrong method answers `405`
/// rather than Hummingbird's `404`.
public struct RouteTable: Sendable {
    private var methods: [String: [HTTPRequest.Method]] = [:]

    /// Creates an empty table.
    public init() {}

    /// Records that `path` accepts `method`.
    public mutating func add(_ method: HTTPRequest.Method, _ path: String) {
        methods[path, default: []].append(method)
    }

    /// The methods `path` accepts, or `nil` for an unknown path.
    public func allowedMethods(for path: String) -> [HTTPRequest.Method]? {
        var normalized = path
        while normalized.count > 1 && normalized.hasSuffix("/") { normalized.removeLast() }
        return methods[normalized]
    }
}
