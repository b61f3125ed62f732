import Foundation
public import JWTKit
import Logging
import NIOHTTP1

/// Fetches Apple's public keys from `GET {baseURL}/auth/keys`.
public struct HTTPAppleKeySource: AppleKeySource {
    /// Where Apple is reached.
    public let endpoints: AppleEndpoints
    /// The deadline of each fetch.
    public let timeout: Duration

    /// Creates a source fetching from `endpoints` within `timeout`.
    public init(_ endpoints: AppleEndpoints, timeout: Duration = .seconds(10)) {
        self.endpoints = endpoints
        self.timeout = timeout
    }

    /// Fetches and decodes the key set.
    /// - Throws: ``AppleIDError`` with code `apple_unavailable` when Apple cannot be reached, answers other than 200, or
    ///   answers something that is not a JWKS document.
    public func fetchKeys() async throws -> JWKS {
        try await endpoints.call(.keys, .GET, path: "auth/keys", clientID: nil, timeout: timeout) { url throws(AppleIDError) in
            AppleHTTPExchange.get(url)
        } answer: { exchange throws(AppleIDError) in
            guard exchange.status == 200 else {
                throw .appleUnavailable("Apple's key endpoint answered HTTP \(exchange.status)")
            }
            do {
                return try JSONDecoder().decode(JWKS.self, from: exchange.body)
            } catch {
                throw .appleUnavailable("Apple's key endpoint answered something that is not a JWKS document")
            }
        } log: { result, logger in
            switch result {
            case .success(let jwks): logger.debug("Fetched Apple's keys", metadata: ["apple.key_count": "\(jwks.keys.count)"])
            case .failure(let error): logger.warning("Could not fetch Apple's keys", metadata: ["apple.error": "\(error)"])
            }
        }
    }
}
