public import AppleID
public import Foundation
public import JWTKit
import Synchronization

/// A key source for tests that counts its fetches, can be made to fail, can swap its keys, and can be slowed down.
public final class AppleIDCountingKeySource: AppleKeySource {
    private struct State {
        var jwks: Data
        var failing = false
        var fetches = 0
    }

    private let state: Mutex<State>
    private let delay: Duration

    /// Serves the JWKS document `jwksJSON`, taking `delay` per fetch.
    public init(jwksJSON: Data, delay: Duration = .zero) {
        self.state = Mutex(State(jwks: jwksJSON))
        self.delay = delay
    }

    /// How many fetches were made (failed ones included).
    public var fetchCount: Int { state.withLock { $0.fetches } }

    /// Makes the following fetches fail (as if Apple were unreachable), or succeed again.
    public func setFailing(_ failing: Bool) {
        state.withLock { $0.failing = failing }
    }

    /// Serves another JWKS document from the next fetch on.
    public func setJWKS(_ jwksJSON: Data) {
        state.withLock { $0.jwks = jwksJSON }
    }

    /// Counts the fetch, waits the delay, then fails or serves the keys.
    public func fetchKeys() async throws -> JWKS {
        let (data, failing) = state.withLock { state in
            state.fetches += 1
            return (state.jwks, state.failing)
        }
        if delay > .zero { try await Task.sleep(for: delay) }
        if failing { throw AppleIDError.appleUnavailable("test key source is failing") }
        return try JSONDecoder().decode(JWKS.self, from: data)
    }
}
