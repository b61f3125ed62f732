import JWTKit

/// An access token's claims, exactly the contract's (RFC 9068's shape): nothing personal, no Apple subject.
struct AccessTokenClaims: JWTPayload, Equatable {
    /// ``AccessTokenConfiguration/issuer``.
    let iss: String
    /// The account id.
    let sub: String
    /// The session id, as `GET /v1/sessions` shows it.
    let sid: String
    /// The Apple client id the account signed in with.
    let clientID: String
    /// ``AccessTokenConfiguration/effectiveAudiences``: a string when there is one.
    let aud: AudienceClaim
    /// Issued at, seconds since 1970.
    let iat: Int64
    /// Not before: the issue time.
    let nbf: Int64
    /// Expires at: `iat` + the token lifetime.
    let exp: Int64
    /// A random id of its own.
    let jti: String
    /// The organization of a Managed Apple Account; absent for a consumer Apple ID.
    let orgID: String?

    enum CodingKeys: String, CodingKey {
        case iss, sub, sid, aud, iat, nbf, exp, jti
        case clientID = "client_id"
        case orgID = "org_id"
    }

    /// Nothing to check: Orchard only signs these.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
