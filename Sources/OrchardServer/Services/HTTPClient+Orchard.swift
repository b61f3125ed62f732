public import AsyncHTTPClient

extension HTTPClient {
    /// The shared client `orchard serve` talks to Apple and to webhooks with: up to 32 connections per host, so the
    /// refresh validator's 16 concurrent calls, revocations and sign-ins do not queue behind one another (the default
    /// of 8 halved validation throughput and let queueing eat into each call's deadline; see Benchmarks/README.md).
    public static func makeOrchardClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 32
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}
