public import AppleID
import Foundation
import JWTKit

/// Signed access tokens for the app's other backends (`POST /v1/session/token`): a session's identity, signed with
/// the current key of ``SigningKeys``, for a live session only.
public struct AccessTokens: Sendable {
    /// A token just issued.
    public struct Issued: Sendable {
        /// The JWT.
        public var token: Redacted<String>
        /// Its lifetime in seconds.
        public var expiresIn: Int
    }

    let accounts: AccountDesk
    /// The keys that sign and verify them.
    public let keys: SigningKeys
    let clock: any WallClock
    let random: any RandomSource

    /// Issuer, audiences, lifetimes.
    public var configuration: AccessTokenConfiguration { keys.configuration }

    /// A token for the live session behind `sessionToken`: none for a session that has ended.
    ///
    /// - Throws: `session_invalid` or `session_revoked` as the session check does; `storage_unavailable` when the keys
    ///   cannot be read or opened.
    public func issue(sessionToken: String) async throws(AccountsError) -> Issued {
        let checked = try await accounts.checkedSession(token: sessionToken)
        let (session, account) = (checked.session, try accounts.account(of: checked))
        let signer = try await keys.signer()
        let issuedAt = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        let ttl = configuration.ttl.components.seconds
        let claims = AccessTokenClaims(
            iss: configuration.issuer,
            sub: account.id,
            sid: session.id,
            // The session's own client id: a token minted in one app is never presented as another's.
            clientID: session.clientID ?? account.clientID,
            aud: AudienceClaim(value: configuration.effectiveAudiences),
            iat: issuedAt,
            nbf: issuedAt,
            exp: issuedAt + ttl,
            jti: random.id("at_"),
            orgID: account.orgID
        )
        var header = JWTHeader()
        header.alg = "ES256"
        header.typ = "at+jwt"
        header.kid = signer.kid
        do {
            let token = try await signer.keys.sign(claims, kid: JWKIdentifier(string: signer.kid), header: header)
            return Issued(token: Redacted(token), expiresIn: Int(ttl))
        } catch {
            throw AccountsError(.internalError, "the access token could not be signed")
        }
    }
}
