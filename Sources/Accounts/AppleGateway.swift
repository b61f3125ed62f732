public import AppleID

/// What the lifecycle needs from Apple: verify what the app hands over and talk to Apple's REST endpoints.
///
/// ``LiveAppleGateway`` is the real one; unit tests may inject a fake.
public protocol AppleGateway: Sendable {
    /// Verifies an identity token (signature, `iss`, `aud`, `exp`, `iat`); the nonce is the caller's to check.
    func verifyIdentityToken(_ token: String, expectedAudience: String?) async throws -> AppleIdentityClaims
    /// Verifies a server-to-server notification's JWS.
    func verifyNotification(_ jws: String) async throws -> AppleNotification
    /// Exchanges an authorization code at `/auth/token`.
    func exchangeCode(_ code: Redacted<String>, clientID: String, redirectURI: String?) async throws -> AppleTokenResponse
    /// Validates a refresh token at `/auth/token` (`grant_type=refresh_token`).
    func validateRefreshToken(_ token: Redacted<String>, clientID: String) async throws -> AppleTokenResponse
    /// Revokes a token at `/auth/revoke`.
    func revoke(_ token: Redacted<String>, hint: TokenTypeHint, clientID: String, deadline: Duration?) async throws
    /// App transfer, sending side: a user's transfer identifier for the team `target` at `/auth/usermigrationinfo`.
    func transferSub(for sub: Redacted<String>, target: String, clientID: String) async throws -> Redacted<String>
    /// App transfer, receiving side: exchanges a transfer identifier for this team's subject at
    /// `/auth/usermigrationinfo`.
    func exchangeTransferSub(_ transferSub: Redacted<String>, clientID: String) async throws -> AppleTransferExchange
}

/// The gateway over Apple's real (or emulated) endpoints.
public struct LiveAppleGateway: AppleGateway {
    private let verifier: AppleTokenVerifier
    private let client: AppleRESTClient

    /// Creates the gateway from the verifier and the REST client.
    public init(verifier: AppleTokenVerifier, client: AppleRESTClient) {
        self.verifier = verifier
        self.client = client
    }

    /// Verifies an identity token.
    public func verifyIdentityToken(_ token: String, expectedAudience: String?) async throws -> AppleIdentityClaims {
        try await verifier.verifyIdentityToken(token, expectedAudience: expectedAudience)
    }

    /// Verifies a notification.
    public func verifyNotification(_ jws: String) async throws -> AppleNotification {
        try await verifier.verifyNotification(jws)
    }

    /// Exchanges an authorization code.
    public func exchangeCode(_ code: Redacted<String>, clientID: String, redirectURI: String?) async throws -> AppleTokenResponse {
        try await client.exchangeCode(code, clientID: clientID, redirectURI: redirectURI)
    }

    /// Validates a refresh token.
    public func validateRefreshToken(_ token: Redacted<String>, clientID: String) async throws -> AppleTokenResponse {
        try await client.validateRefreshToken(token, clientID: clientID)
    }

    /// Revokes a token.
    public func revoke(_ token: Redacted<String>, hint: TokenTypeHint, clientID: String, deadline: Duration?) async throws {
        try await client.revoke(token, hint: hint, clientID: clientID, deadline: deadline)
    }

    /// Asks for a user's transfer identifier.
    public func transferSub(for sub: Redacted<String>, target: String, clientID: String) async throws -> Redacted<String> {
        try await client.transferSub(for: sub, target: target, clientID: clientID)
    }

    /// Exchanges a transfer identifier.
    public func exchangeTransferSub(_ transferSub: Redacted<String>, clientID: String) async throws -> AppleTransferExchange {
        try await client.exchangeTransferSub(transferSub, clientID: clientID)
    }
}
