public import Accounts
public import AppleID
public import AsyncHTTPClient
public import Logging
public import Metrics
public import Prometheus
public import Storage

/// What the composition root wires together: real parts in `serve`, the same parts with test clocks in tests.
public struct OrchardDependencies: Sendable {
    /// The validated settings.
    public var configuration: OrchardConfiguration
    /// The database.
    public var database: any DatabaseClient
    /// What the database brings to the session memory (``Storage/OpenedDatabase/sessionBackend``).
    public var sessionBackend: SessionBackend
    /// Whether this process answers session checks from memory: `serve` with `ORCHARD_SESSION_CACHE=on`; the commands,
    /// which check no sessions, do not.
    public var answersSessionChecks = false
    /// The session memory's lifetimes and waits (`nil`: the backend's standard ones; a test may shorten them: they are
    /// no setting).
    public var sessionTimings: SessionTimings?
    /// The time the session memory and the replicas' protocol count in (a test drives its own).
    public var monotonicClock: any MonotonicClock = SystemMonotonicClock()
    /// The one shared HTTP client (to Apple and to webhook receivers).
    public var httpClient: HTTPClient
    /// The wall clock.
    public var clock: any WallClock
    /// The randomness for tokens and ids.
    public var random: any RandomSource
    /// Where `/metrics` reads from; the process's metrics factory should write into it.
    public var registry: PrometheusCollectorRegistry
    /// Where Orchard's own metrics go: by default a Prometheus factory over ``registry``, so `/metrics` shows them
    /// without a process-wide bootstrap. Tests add swift-metrics' `TestMetrics` beside it.
    public var metrics: any MetricsFactory
    /// The root logger.
    public var logger: Logger
    /// Whether requests get a server span each (Hummingbird's `TracingMiddleware`): `serve` sets it when it has
    /// bootstrapped an OpenTelemetry tracer, and leaves the hot paths without the middleware otherwise.
    public var tracesRequests: Bool = false
    /// How often each background job kind looks for due work besides the wake-ups requests send: every second in
    /// production (the contract's "picked up within 1 s"); `nil` runs no background passes at all, and a test drives
    /// them with ``OrchardApplication/jobs`` (`JobService.runPasses()`), like the clock.
    public var jobTick: Duration? = .seconds(1)
    /// How long calls out may take: the contract's deadlines (a test may change them; they are no setting).
    public var deadlines = Deadlines()
    /// How many notifications may be stored ahead of processing before the endpoint holds the next one back
    /// (``Lifecycle/inboxRoom``; a test may make it small: it is no setting).
    public var inboxRoom = Lifecycle.inboxRoom
    /// Where the application's services are entered while they run (`serve` names those still running when its shutdown
    /// passes its limit).
    public var roster = ServiceRoster()

    /// Creates the dependencies.
    public init(
        configuration: OrchardConfiguration,
        database: any DatabaseClient,
        sessionBackend: SessionBackend,
        httpClient: HTTPClient,
        clock: any WallClock = SystemWallClock(),
        random: any RandomSource = SystemRandomSource(),
        registry: PrometheusCollectorRegistry,
        metrics: (any MetricsFactory)? = nil,
        logger: Logger
    ) {
        self.metrics = metrics ?? PrometheusMetricsFactory(registry: registry)
        self.configuration = configuration
        self.database = database
        self.sessionBackend = sessionBackend
        self.httpClient = httpClient
        self.clock = clock
        self.random = random
        self.registry = registry
        self.logger = logger
    }
}
