import Metrics

/// Records `orchard_apple_request_duration_seconds` for every request to Apple.
enum AppleRequestMetrics {
    /// The metric's name.
    static let label = "orchard_apple_request_duration_seconds"

    /// Which of Apple's endpoints was called.
    enum Endpoint: String {
        /// `GET /auth/keys`.
        case keys
        /// `POST /auth/token`.
        case token
        /// `POST /auth/revoke`.
        case revoke
        /// `POST /auth/usermigrationinfo` (app transfer).
        case userMigrationInfo = "usermigrationinfo"
    }

    /// How the call ended.
    enum Outcome: String {
        /// Apple answered as hoped.
        case ok
        /// Apple refused the request (a 4xx with an error code).
        case rejected
        /// Apple could not be reached, timed out, or answered 5xx, 429 or an unreadable body.
        case unavailable
    }

    /// Records one request's duration under its endpoint and outcome.
    static func record(_ endpoint: Endpoint, _ outcome: Outcome, duration: Duration, factory: any MetricsFactory) {
        Metrics.Timer(
            label: label,
            dimensions: [("endpoint", endpoint.rawValue), ("outcome", outcome.rawValue)],
            factory: factory
        ).recordNanoseconds(duration.nanoseconds)
    }

    /// The outcome that an error of this module stands for.
    static func outcome(for error: AppleIDError) -> Outcome {
        error.isTransient ? .unavailable : .rejected
    }
}
