public import AsyncHTTPClient

extension HTTPClient {
    /// The shared client `orchard serve` talks to Apple and to webhooks with: up to 32 connections per host, so the
    /// refresh validator's 16 concurrent calls, revocations and sign-ins do not queue behind one another (with the
    /// default of 8, calls wait in the pool and queueing eats into each call's deadline; `ValidationBenchmark`'s
    /// wider-pool scenario guards this).
    ///
    /// It follows no redirect: a 3xx from Apple or a receiver is that attempt's answer (and a failure), so a form with
    /// a client secret or a refresh token, or a signed webhook, is never resent to wherever a `Location` points.
    public static func makeOrchardClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 32
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}
