public import Accounts
public import AppleID
import Foundation
import Synchronization

/// Apple as a unit test scripts it: each call answers with what the test set, and is recorded. Only the calls the
/// background jobs make (validation, revocation) are scripted; the others refuse.
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

    /// Refused: unit tests do not sign in.
    public func verifyIdentityToken(_ token: String, expectedAudience: String?) async throws -> AppleIdentityClaims {
        throw AppleIDError.appleUnavailable("not scripted")
    }

    /// Refused: unit tests store notifications themselves.
    public func verifyNotification(_ jws: String) async throws -> AppleNotification {
        throw AppleIDError.appleUnavailable("not scripted")
    }

    /// Refused: unit tests do not sign in.
    public func exchangeCode(_ code: Redacted<String>, clientID: String, redirectURI: String?) async throws -> AppleTokenResponse {
        throw AppleIDError.appleUnavailable("not scripted")
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
