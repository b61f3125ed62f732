import Hummingbird
public import ServiceLifecycle

/// `serve`'s application as one service of its service group: it builds the application (which migrates the database,
/// so the database's own services, listed before it, must run beside it) and then runs it until graceful shutdown.
public struct OrchardService: Service, CustomStringConvertible {
    let dependencies: OrchardDependencies

    /// The service for `dependencies`.
    public init(dependencies: OrchardDependencies) {
        self.dependencies = dependencies
    }

    /// Its name alone (a service group logs each service's description).
    public var description: String { "OrchardService" }

    /// Builds and runs the application.
    /// - Throws: ``ConfigurationError`` for a setting that cannot be used, or what the application throws.
    public func run() async throws {
        try await buildApplication(dependencies).application.run()
    }
}
