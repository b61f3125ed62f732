import Foundation

/// An access token and when it stops being handed out from the cache.
struct CachedAccessToken: Sendable {
    var token: String
    var expiresAt: Date
    var lifetime: TimeInterval
}

extension OrchardClient {
    /// A signed access token for the app's other backends (`POST /v1/session/token`), to send them as
    /// `Authorization: Bearer …`. The token is kept and handed out again while more than a fifth of its lifetime is
    /// left; then a new one is asked for. A sign-out drops it.
    ///
    /// A backend that verifies these tokens sees a sign-out only when the token expires (minutes at most); one that
    /// must know at once checks the session with Orchard instead.
    /// - Throws: ``OrchardError/notSignedIn`` without a session, and when the app was signed out while Orchard answered;
    ///   `session_revoked` or `session_invalid` (the app is then signed out) as every call.
    public func accessToken() async throws(OrchardError) -> String {
        if let cached = cachedAccessToken, cached.expiresAt.timeIntervalSince(now()) > cached.lifetime / 5 {
            return cached.token
        }
        struct Answer: Decodable {
            var accessToken: String
            var expiresIn: Int
            enum CodingKeys: String, CodingKey {
                case accessToken = "access_token"
                case expiresIn = "expires_in"
            }
        }
        let stored = try storedSession()
        let generation = wipeGeneration
        let asked = now()
        let answer: Answer = try await call("POST", "/v1/session/token", bearer: stored.token)
        guard wipeGeneration == generation else { throw .notSignedIn }
        let lifetime = TimeInterval(answer.expiresIn)
        cachedAccessToken = CachedAccessToken(token: answer.accessToken, expiresAt: asked.addingTimeInterval(lifetime), lifetime: lifetime)
        return answer.accessToken
    }
}
