public import AsyncHTTPClient
public import ServiceLifecycle

/// Owns the shared `HTTPClient`'s lifetime: waits for graceful shutdown, then shuts the client down. Listed first among
/// the application's services, so it stops last, after everything that makes outbound calls.
public struct HTTPClientService: Service, CustomStringConvertible {
    let client: HTTPClient

    /// Its name alone (a service group logs each service's description).
    public var description: String { "HTTPClientService" }

    /// Creates the service for the root's client.
    public init(client: HTTPClient) {
        self.client = client
    }

    /// Waits for graceful shutdown, then shuts the client down.
    public func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}
