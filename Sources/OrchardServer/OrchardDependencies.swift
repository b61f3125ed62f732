public import Accounts
public import AppleID
public import AsyncHTTPClient
public import Logging
public import Prometheus
public import Storage

/// What the composition root wires together: real parts in `serve`, the same parts with test clocks in tests.
public struct OrchardDependencies: Sendable {
    /// The validated settings.
    public var configuration: OrchardConfiguration
    /// The database.
    public var database: any DatabaseClient
    /// The one shared HTTP client (to Apple, and to webhooks later).
    public var httpClient: HTTPClient
    /// The wall clock.
    public var clock: any WallClock
    /// The randomness for tokens and ids.
    public var random: any RandomSource
    /// Where `/metrics` reads from; the process's metrics factory should write into it.
    public var registry: PrometheusCollectorRegistry
    /// The root logger.
    public var logger: Logger

    /// Creates the dependencies.
    public init(
        configuration: OrchardConfiguration,
        database: any DatabaseClient,
        httpClient: HTTPClient,
        clock: any WallClock = SystemWallClock(),
        random: any RandomSource = SystemRandomSource(),
        registry: PrometheusCollectorRegistry,
        logger: Logger
    ) {
        self.configuration = configuration
        self.database = database
        self.httpClient = httpClient
        self.clock = clock
        self.random = random
        self.registry = registry
        self.logger = logger
    }
}
