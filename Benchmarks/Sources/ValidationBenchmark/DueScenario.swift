import Accounts

/// One scenario over due accounts: which lifecycle validates them, how many, and how slow Apple is.
struct DueScenario: Sendable {
    /// The label in the report.
    var name: String
    /// The lifecycle whose passes run (its HTTP client decides the connections per host).
    var lifecycle: Lifecycle
    /// How many accounts fall due.
    var due: Int
    /// The emulator's latency during the scenario.
    var latency: Duration
    /// The connections per host of the lifecycle's HTTP client, for the report.
    var connections: Int
}
