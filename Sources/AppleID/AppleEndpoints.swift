public import AsyncHTTPClient
public import Foundation
public import Logging
public import Metrics
import NIOHTTP1
import Tracing

/// Where Orchard reaches Apple (`https://appleid.apple.com`, or a stand-in) and how every call there goes: over the
/// application's shared HTTP client, within a deadline, following no redirect, traced as `METHOD /path`, logged with
/// dotted metadata (`apple.endpoint`, `apple.client_id`, `apple.status`, `apple.error`; never a token or secret) and
/// timed in `orchard_apple_request_duration_seconds` (dimensions `endpoint` and `outcome`). ``AppleRESTClient`` and
/// ``HTTPAppleKeySource`` call Apple through it.
public struct AppleEndpoints: Sendable {
    /// Where Apple's endpoints are reached; their paths (`auth/token`, `auth/keys`, …) are appended.
    public let baseURL: URL
    let httpClient: HTTPClient
    let metrics: any MetricsFactory
    let logger: Logger

    /// Reaches Apple at `baseURL` over the application's shared `httpClient`.
    /// - Parameters:
    ///   - metrics: Where `orchard_apple_request_duration_seconds` goes; the process's factory by default.
    ///   - logger: Where calls are logged.
    public init(baseURL: URL, httpClient: HTTPClient, metrics: any MetricsFactory = MetricsSystem.factory, logger: Logger) {
        self.baseURL = baseURL
        self.httpClient = httpClient
        self.metrics = metrics
        self.logger = logger
    }

    /// One call to `path`: `request` builds it for the endpoint's URL (a failure there ends the call before anything is
    /// sent, untimed), `answer` turns Apple's answer into `Value` or an error, and `log` is told the outcome with the
    /// call's logger. A failure is recorded in the span and the metric before it is thrown. The span (a no-op unless
    /// `serve` bootstrapped a tracer) records the URL, the endpoint and the client id, never the form.
    func call<Value>(
        _ endpoint: AppleRequestMetrics.Endpoint,
        _ method: HTTPMethod,
        path: String,
        clientID: String?,
        timeout: Duration,
        request: (URL) async throws(AppleIDError) -> HTTPClientRequest,
        answer: (AppleHTTPExchange) throws(AppleIDError) -> Value,
        log: (Result<Value, AppleIDError>, Logger) -> Void
    ) async throws(AppleIDError) -> Value {
        var logger = self.logger
        logger[metadataKey: "apple.endpoint"] = "\(endpoint.rawValue)"
        if let clientID { logger[metadataKey: "apple.client_id"] = "\(clientID)" }
        let url = baseURL.appending(path: path)
        let span = startSpan("\(method.rawValue) /\(path)", ofKind: .client)
        span.updateAttributes { attributes in
            attributes["http.request.method"] = method.rawValue
            attributes["url.full"] = url.absoluteString
            attributes["server.address"] = url.host()
            attributes["apple.endpoint"] = endpoint.rawValue
            attributes["apple.client_id"] = clientID
        }
        defer { span.end() }
        let request = try await request(url)

        let started = ContinuousClock.now
        do throws(AppleIDError) {
            let exchange = try await AppleHTTPExchange.perform(request, httpClient: httpClient, timeout: timeout, logger: logger)
            logger[metadataKey: "apple.status"] = "\(exchange.status)"
            span.attributes["http.response.status_code"] = exchange.status
            let value = try answer(exchange)
            AppleRequestMetrics.record(endpoint, .ok, duration: ContinuousClock.now - started, factory: metrics)
            log(.success(value), logger)
            return value
        } catch {
            AppleRequestMetrics.record(endpoint, AppleRequestMetrics.outcome(for: error), duration: ContinuousClock.now - started, factory: metrics)
            span.attributes["error.type"] = error.appleErrorCode?.rawValue ?? error.code.rawValue
            span.setStatus(SpanStatus(code: .error))
            log(.failure(error), logger)
            throw error
        }
    }
}
