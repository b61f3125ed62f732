public import AppleID

/// What an app hands Orchard after the user signed in with Apple (the body of `POST /v1/auth/apple`, or the web flow's
/// form post).
public struct SignInRequest: Sendable {
    /// What Apple shares on the first authorization only.
    public struct FirstAuthorizationUser: Sendable {
        /// Given name.
        public var firstName: String?
        /// Family name.
        public var lastName: String?
        /// Email as the app saw it; the signed identity token's email wins over it.
        public var email: Redacted<String>?

        /// Creates the user details.
        public init(firstName: String?, lastName: String?, email: Redacted<String>?) {
            self.firstName = firstName
            self.lastName = lastName
            self.email = email
        }
    }

    /// The identity token (a JWS).
    public var identityToken: Redacted<String>
    /// The authorization code to exchange.
    public var authorizationCode: Redacted<String>
    /// The raw nonce Orchard issued.
    public var nonce: String?
    /// The client id the app says it used; must equal the token's `aud` when given.
    public var clientID: String?
    /// The first authorization's user details.
    public var user: FirstAuthorizationUser?
    /// The redirect URI the web flow authorized with (sent again in the code exchange).
    public var redirectURI: String?

    /// Creates a request.
    public init(
        identityToken: Redacted<String>,
        authorizationCode: Redacted<String>,
        nonce: String?,
        clientID: String? = nil,
        user: FirstAuthorizationUser? = nil,
        redirectURI: String? = nil
    ) {
        self.identityToken = identityToken
        self.authorizationCode = authorizationCode
        self.nonce = nonce
        self.clientID = clientID
        self.user = user
        self.redirectURI = redirectURI
    }
}
