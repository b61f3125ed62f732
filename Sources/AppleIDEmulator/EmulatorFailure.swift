/// How an injected failure makes one of Apple's endpoints misbehave.
public enum EmulatorFailure: Sendable, Hashable {
    /// Answer with this HTTP status and an empty body (e.g. 503, 429, 500).
    case status(Int)
    /// Hold the request without answering, until ``AppleEmulatorConfiguration/timeoutHold`` passes (then 504) or the
    /// server shuts down: the client's own deadline has to end it.
    case timeout
    /// Answer 400 with this Apple error code, e.g. `{"error":"invalid_client"}`.
    case appleError(String)
}
