public import JWTKit

/// Where ``AppleKeySet`` gets Apple's public keys from: Apple's `/auth/keys` in production, a file or a fake elsewhere.
public protocol AppleKeySource: Sendable {
    /// Fetches the current key set. Throwing means the keys could not be had (network, status, body).
    func fetchKeys() async throws -> JWKS
}
