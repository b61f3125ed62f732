/// What a device gets from Apple when the user taps "Continue with Apple": the identity token and the one-time code.
public struct EmulatedAuthorization: Sendable, Hashable {
    /// The RS256 identity token, for the app's backend to verify.
    public var identityToken: String
    /// The one-time authorization code, for the backend to exchange at `/auth/token`.
    public var authorizationCode: String
    /// Who signed in.
    public var user: EmulatedUser
    /// Whether this is the first authorization of this client by this user since the last revocation: only then does
    /// Apple hand the app the user's name (and the `user` JSON of the web flow).
    public var isFirstAuthorization: Bool

}
