/// How access tokens are made: the contract's `ORCHARD_TOKEN_ISSUER`, `ORCHARD_TOKEN_AUDIENCE`,
/// `ORCHARD_ACCESS_TOKEN_TTL` and `ORCHARD_TOKEN_KEY_LIFETIME`.
public struct AccessTokenConfiguration: Sendable, Equatable {
    /// The tokens' `iss`.
    public var issuer: String
    /// Their `aud`: one value is a string in the token, several an array. Empty means the issuer.
    public var audiences: [String]
    /// How long a token lives (1 second to 1 hour).
    public var ttl: Duration
    /// How long a key signs before the next takes over.
    public var keyLifetime: Duration

    /// The contract's defaults, for an issuer.
    public init(issuer: String, audiences: [String] = [], ttl: Duration = .seconds(300), keyLifetime: Duration = .seconds(2_592_000)) {
        self.issuer = issuer
        self.audiences = audiences
        self.ttl = ttl
        self.keyLifetime = keyLifetime
    }

    /// The `aud` values tokens carry.
    public var effectiveAudiences: [String] { audiences.isEmpty ? [issuer] : audiences }
}
