import JWTKit

/// The claims of a client secret: `iss` team id, `sub` client id, `aud` Apple, `iat` and `exp` in whole seconds.
struct ClientSecretClaims: JWTPayload, Equatable {
    /// The developer team id.
    let iss: String
    /// The client id the secret authenticates.
    let sub: String
    /// Always `https://appleid.apple.com`.
    let aud: String
    /// Issued at, seconds since 1970.
    let iat: Int64
    /// Expires at, seconds since 1970.
    let exp: Int64

    /// Nothing to check: Orchard only signs these.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
