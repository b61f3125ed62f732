import Foundation

extension EmulatorState {
    /// An Apple error answered with HTTP 400.
    struct OAuthError: Error, Hashable, Sendable {
        var code: String
        var description: String? = nil
        var detail: String?
    }

    /// What a successful code exchange or refresh hands back, before the id_token is signed.
    struct TokenGrant: Sendable {
        var accessToken: String
        var refreshToken: String?
        var user: EmulatedUser
        var clientID: String
        var nonce: String?
        var authTime: Date
    }
}
