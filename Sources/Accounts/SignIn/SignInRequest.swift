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
    /// A label for the new session ("Alice's iPhone"; the web flow's from the browser's `User-Agent`), checked by
    /// ``deviceProblem(_:)``.
    public var device: String?

    /// The longest device label, in Unicode scalars.
    public static let maximumDeviceLength = 64

    /// Creates a request.
    public init(
        identityToken: Redacted<String>,
        authorizationCode: Redacted<String>,
        nonce: String?,
        clientID: String? = nil,
        user: FirstAuthorizationUser? = nil,
        redirectURI: String? = nil,
        device: String? = nil
    ) {
        self.identityToken = identityToken
        self.authorizationCode = authorizationCode
        self.nonce = nonce
        self.clientID = clientID
        self.user = user
        self.redirectURI = redirectURI
        self.device = device
    }

    /// Why `device` is not a label a session can keep, or `nil` when it is (or absent): 1 to 64 Unicode scalars (JSON
    /// Schema's characters), none a control character (C0, DEL, C1) or a bidirectional override or isolate, which would
    /// let a label disguise itself in a list of sessions.
    public static func deviceProblem(_ device: String?) -> String? {
        guard let device else { return nil }
        if device.isEmpty { return "field 'device' must not be empty" }
        if device.unicodeScalars.count > maximumDeviceLength {
            return "field 'device' must be at most \(maximumDeviceLength) characters"
        }
        if device.unicodeScalars.contains(where: { scalar in refusedInDevice.contains { $0.contains(scalar.value) } }) {
            return "field 'device' must not contain control characters"
        }
        return nil
    }

    /// The scalars a device label must not hold (the OpenAPI document's pattern for `device` names the same).
    private static let refusedInDevice: [ClosedRange<UInt32>] = [0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069]
}
