public import AsyncHTTPClient
public import Foundation
public import JWTKit
public import Logging
public import Metrics
import Tracing

/// Fetches Apple's public keys from `GET {baseURL}/auth/keys`.
public struct HTTPAppleKeySource: AppleKeySource {
    /// Where Apple's endpoints are reached (`https://appleid.apple.com`, or an emulator).
    public let baseURL: URL
    private let httpClient: HTTPClient
    private let timeout: Duration
    private let logger: Logger
    private let metrics: any MetricsFactory

    /// Creates a source over the shared HTTP client.
    /// - Parameters:
    ///   - baseURL: Where Apple's endpoints are reached; `/auth/keys` is appended.
    ///   - httpClient: The application's shared client.
    ///   - timeout: The deadline of each fetch.
    ///   - metrics: Where `orchard_apple_request_duration_seconds` goes; the process's factory by default.
    ///   - logger: Where fetches are logged (metadata `apple.endpoint`, `apple.status`).
    public init(
        baseURL: URL,
        httpClient: HTTPClient,
        timeout: Duration = .seconds(10),
        metrics: any MetricsFactory = MetricsSystem.factory,
        logger: Logger
    ) {
        self.metrics = metrics
        self.baseURL = baseURL
        self.httpClient = httpClient
        self.timeout = timeout
        self.logger = logger
    }

    /// Fetches and decodes the key set.
    /// - Throws: ``AppleIDError`` with code `apple_unavailable` when Apple cannot be reached, answers other than 200, or
    ///   answers something that is not a JWKS document.
    public func fetchKeys() async throws -> JWKS {
        let started = ContinuousClock.now
        var logger = self.logger
        logger[metadataKey: "apple.endpoint"] = "keys"
        let url = baseURL.appending(path: "auth/keys")
        let span = AppleHTTPExchange.startSpan(method: "GET", path: "auth/keys", url: url, endpoint: .keys, clientID: nil)
        defer { span.end() }
        do {
            let exchange = try await AppleHTTPExchange.perform(
                AppleHTTPExchange.get(url),
                httpClient: httpClient,
                timeout: timeout,
                logger: logger
            )
            logger[metadataKey: "apple.status"] = "\(exchange.status)"
            span.attributes["http.response.status_code"] = exchange.status
            guard exchange.status == 200 else {
                throw AppleIDError.appleUnavailable("Apple's key endpoint answered HTTP \(exchange.status)")
            }
            let jwks: JWKS
            do {
                jwks = try JSONDecoder().decode(JWKS.self, from: exchange.body)
            } catch {
                throw AppleIDError.appleUnavailable("Apple's key endpoint answered something that is not a JWKS document")
            }
            AppleRequestMetrics.record(.keys, .ok, duration: ContinuousClock.now - started, factory: metrics)
            logger.debug("Fetched Apple's keys", metadata: ["apple.key_count": "\(jwks.keys.count)"])
            return jwks
        } catch let error as AppleIDError {
            AppleRequestMetrics.record(.keys, .unavailable, duration: ContinuousClock.now - started, factory: metrics)
            span.attributes["error.type"] = error.code.rawValue
            span.setStatus(SpanStatus(code: .error))
            logger.warning("Could not fetch Apple's keys", metadata: ["apple.error": "\(error)"])
            throw error
        }
    }
}
