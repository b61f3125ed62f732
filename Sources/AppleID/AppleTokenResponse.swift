/// What Apple's `/auth/token` answers a successful code exchange or refresh-token validation with.
///
/// The tokens are ``Redacted``. `token_type` is seen as `bearer` and `Bearer`; a refresh grant returns no refresh token;
/// an exchange may, rarely, return none either.
public struct AppleTokenResponse: Codable, Sendable, Equatable {
    /// `access_token`: valid for an hour; unused by Orchard except to revoke when no refresh token is held.
    public var accessToken: Redacted<String>?
    /// `token_type`: `bearer` (any case).
    public var tokenType: String?
    /// `expires_in`: the access token's lifetime in seconds.
    public var expiresIn: Int?
    /// `refresh_token`: does not expire with time; invalidated by a password change or by the user revoking the app.
    public var refreshToken: Redacted<String>?
    /// `id_token`: an identity token for the user.
    public var idToken: Redacted<String>?

    /// Creates a response, e.g. for an emulator.
    public init(
        accessToken: Redacted<String>? = nil,
        tokenType: String? = "bearer",
        expiresIn: Int? = 3600,
        refreshToken: Redacted<String>? = nil,
        idToken: Redacted<String>? = nil
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.idToken = idToken
    }

    private enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case refreshToken = "refresh_token"
        case idToken = "id_token"
    }

    /// Reads Apple's JSON; `expires_in` may be a number or a string of digits.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accessToken = try container.decodeIfPresent(String.self, forKey: .accessToken).map(Redacted.init)
        tokenType = try container.decodeIfPresent(String.self, forKey: .tokenType)
        expiresIn = try container.decodeLenientIntIfPresent(forKey: .expiresIn)
        refreshToken = try container.decodeIfPresent(String.self, forKey: .refreshToken).map(Redacted.init)
        idToken = try container.decodeIfPresent(String.self, forKey: .idToken).map(Redacted.init)
    }

    /// Writes Apple's JSON, with the tokens in full.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(accessToken?.value, forKey: .accessToken)
        try container.encodeIfPresent(tokenType, forKey: .tokenType)
        try container.encodeIfPresent(expiresIn, forKey: .expiresIn)
        try container.encodeIfPresent(refreshToken?.value, forKey: .refreshToken)
        try container.encodeIfPresent(idToken?.value, forKey: .idToken)
    }
}
