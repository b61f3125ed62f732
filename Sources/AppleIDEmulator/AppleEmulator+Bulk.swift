import Foundation
import Synchronization

extension AppleEmulator {
    /// Starts a grant for `user` at `clientID` and hands back its tokens, as an authorization followed by a code
    /// exchange would, without the HTTP round trip or the identity token: for benchmarks that need many accounts whose
    /// refresh tokens the emulator accepts.
    ///
    /// The grant is the same the emulator makes for a real sign-in (an active grant is reused), so refreshing the
    /// token, revoking it or the user's grant behave as for any other.
    ///
    /// - Throws: ``AppleEmulatorError/Kind/unknownClient`` for a client id not configured;
    ///   ``AppleEmulatorError/Kind/invalidConfiguration`` when the exchange hands back no refresh token (after
    ///   ``omitRefreshToken(nextExchanges:)``) or fails.
    public func issueGrant(user: EmulatedUser, clientID: String) throws -> (refreshToken: String, accessToken: String) {
        guard configuration.allClientIDs.contains(clientID) else {
            throw AppleEmulatorError(.unknownClient, reason: "\(clientID) is not a configured client id")
        }
        let now = self.now
        let codeLifetime = TimeInterval(configuration.codeLifetime.components.seconds)
        let result = state.withLock { state in
            let (code, _) = state.authorize(user: user, clientID: clientID, nonce: nil, redirectURI: nil, now: now)
            return state.exchange(code: code, clientID: clientID, redirectURI: nil, now: now, codeLifetime: codeLifetime)
        }
        switch result {
        case .success(let grant):
            guard let refreshToken = grant.refreshToken else {
                throw AppleEmulatorError.invalidConfiguration("the emulator was told to omit the next refresh token")
            }
            return (refreshToken, grant.accessToken)
        case .failure(let error):
            throw AppleEmulatorError.invalidConfiguration("the code exchange failed: \(error.code)")
        }
    }
}
