public import Accounts
public import AppleID
import Foundation
import Synchronization

/// Apple as a unit test scripts it: each call answers with what the test set, and is recorded. The calls the background
/// jobs make (validation, revocation) and a sign-in's (an identity token from ``identityToken(sub:nonce:audience:email:)``,
/// the code exchange) are scripted; the others refuse.
public final class ScriptedAppleGateway: AppleGateway {
    /// What a refresh-token validation or a revocation answers.
    public enum Answer: Sendable {
        /// Apple accepted.
        case accepted
        /// Apple answered `invalid_grant`.
        case invalidGrant
        /// Apple could not be reached.
        case unavailable
        /// Apple refused Orchard's client (`invalid_client`).
        case clientRejected
    }

    private struct State {
        var validation = Answer.accepted
        var revocation = Answer.accepted
        var exchange = Answer.accepted
        var identities: [String: Data] = [:]
        var exchanged: [String] = []
        var validated: [String] = []
        var revoked: [(token: String, hint: TokenTypeHint)] = []
    }

    private let state = Mutex(State())

    /// Apple answering everything it is asked.
    public init() {}

    /// From now on, validations answer `answer`.
    public func validations(answer: Answer) { state.withLock { $0.validation = answer } }
    /// From now on, revocations answer `answer`.
    public func revocations(answer: Answer) { state.withLock { $0.revocation = answer } }
    /// From now on, code exchanges answer `answer`.
    public func exchanges(answer: Answer) { state.withLock { $0.exchange = answer } }
    /// The authorization codes exchanged so far.
    public var exchanged: [String] { state.withLock { $0.exchanged } }
    /// The refresh tokens validated so far.
    public var validated: [String] { state.withLock { $0.validated } }
    /// The tokens Apple was asked to revoke, with their hints.
    public var revoked: [(token: String, hint: TokenTypeHint)] { state.withLock { $0.revoked } }

    private func outcome(_ answer: Answer) throws {
        switch answer {
        case .accepted: return
        case .invalidGrant: throw AppleIDError.authorizationCodeRejected("invalid_grant")
        case .unavailable: throw AppleIDError.appleUnavailable("Apple answered 503")
        case .clientRejected: throw AppleIDError.appleClientRejected(.invalidClient, reason: "invalid_client")
        }
    }

    /// An identity token this gateway verifies as Apple's, for `sub` and `audience`, carrying the SHA-256 of `nonce`
    /// as Apple's tokens do (the signature and the token's shape are the verifier's tests; here only the claims matter).
    public func identityToken(sub: String, nonce: String?, audience: String, email: String? = nil) -> String {
        var claims: [String: Any] = [
            "iss": "https://appleid.apple.com",
            "aud": audience,
            "sub": sub,
            "iat": Int(Date().timeIntervalSince1970),
            "exp": Int(Date().timeIntervalSince1970) + 600,
        ]
        if let nonce { claims["nonce"] = AppleNonce.hash(nonce) }
        if let email {
            claims["email"] = email
            claims["email_verified"] = true
        }
        let token = "scripted.\(UUID().uuidString).token"
        // The dictionary holds JSON values only.
        let json = (try? JSONSerialization.data(withJSONObject: claims)) ?? Data()
        state.withLock { $0.identities[token] = json }
        return token
    }

    /// The claims of a token from ``identityToken(sub:nonce:audience:email:)``; any other token fails as a bad
    /// signature, and one for another audience as Apple's would.
    public func verifyIdentityToken(_ token: String, expectedAudience: String?) async throws -> AppleIdentityClaims {
        guard let json = state.withLock({ $0.identities[token] }) else { throw AppleIDError.signature("not a scripted token") }
        let claims = try JSONDecoder().decode(AppleIdentityClaims.self, from: json)
        if let expectedAudience, claims.aud != expectedAudience {
            throw AppleIDError.audience("the token is for another client id")
        }
        return claims
    }

    /// Refused: unit tests store notifications themselves.
    public func verifyNotification(_ jws: String) async throws -> AppleNotification {
        throw AppleIDError.appleUnavailable("not scripted")
    }

    /// Answers as scripted, recording the code; on acceptance a refresh token and an access token named after it.
    public func exchangeCode(_ code: Redacted<String>, clientID: String, redirectURI: String?) async throws -> AppleTokenResponse {
        let answer = state.withLock { state in
            state.exchanged.append(code.value)
            return state.exchange
        }
        try outcome(answer)
        return AppleTokenResponse(accessToken: Redacted("at-\(code.value)"), refreshToken: Redacted("rt-\(code.value)"))
    }

    /// Answers as scripted; a new access token on acceptance.
    public func validateRefreshToken(_ token: Redacted<String>, clientID: String) async throws -> AppleTokenResponse {
        let answer = state.withLock { state in
            state.validated.append(token.value)
            return state.validation
        }
        try outcome(answer)
        return AppleTokenResponse(accessToken: Redacted("access-\(token.value)"))
    }

    /// Answers as scripted, recording the token.
    public func revoke(_ token: Redacted<String>, hint: TokenTypeHint, clientID: String, deadline: Duration?) async throws {
        let answer = state.withLock { state in
            state.revoked.append((token.value, hint))
            return state.revocation
        }
        try outcome(answer)
    }

    /// Refused: unit tests of transfers script the store instead.
    public func transferSub(for sub: Redacted<String>, target: String, clientID: String) async throws -> Redacted<String> {
        throw AppleIDError.appleUnavailable("not scripted")
    }

    /// Refused.
    public func exchangeTransferSub(_ transferSub: Redacted<String>, clientID: String) async throws -> AppleTransferExchange {
        throw AppleIDError.appleUnavailable("not scripted")
    }
}
