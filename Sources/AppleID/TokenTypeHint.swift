/// The `token_type_hint` of a revocation: which kind of token is being revoked.
public enum TokenTypeHint: String, Sendable, Equatable, Hashable, CaseIterable {
    /// A refresh token (`refresh_token`).
    case refreshToken = "refresh_token"
    /// An access token (`access_token`).
    case accessToken = "access_token"
}
