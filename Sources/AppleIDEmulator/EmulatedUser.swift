/// A person with an Apple ID, as the emulator signs them in.
public struct EmulatedUser: Sendable, Hashable, Codable {
    /// Apple's stable user identifier for the team, e.g. `000123.0123456789abcdef0123456789abcdef.0456`.
    public var sub: String
    /// The address the app sees: a private relay address by default; `nil` when the app did not get one.
    public var email: String?
    /// Whether ``email`` is a private relay address.
    public var isPrivateEmail: Bool
    /// Whether Apple vouches for ``email`` (false happens for managed Apple IDs).
    public var emailVerified: Bool
    /// Apple's real-user indicator: 0 unsupported, 1 unknown, 2 likely real.
    public var realUserStatus: Int
    /// The given name the user shared on the first authorization.
    public var firstName: String?
    /// The family name the user shared on the first authorization.
    public var lastName: String?
    /// The organization of a Managed Apple Account (Apple School or Business Manager): the token's `org_id`.
    public var orgID: String?

    /// Creates a user with every field given.
    public init(
        sub: String,
        email: String?,
        isPrivateEmail: Bool,
        emailVerified: Bool = true,
        realUserStatus: Int = 2,
        firstName: String? = nil,
        lastName: String? = nil,
        orgID: String? = nil
    ) {
        self.sub = sub
        self.email = email
        self.isPrivateEmail = isPrivateEmail
        self.emailVerified = emailVerified
        self.realUserStatus = realUserStatus
        self.firstName = firstName
        self.lastName = lastName
        self.orgID = orgID
    }

    /// The domain of Apple's private email relay.
    public static let privateRelayDomain = "privaterelay.appleid.com"
    /// The domain of the relay addresses Apple makes from late 2026.
    public static let newerPrivateRelayDomain = "private.icloud.com"

    /// Whether `email` is an address of either relay domain.
    public static func isPrivateRelay(_ email: String) -> Bool {
        email.hasSuffix("@\(privateRelayDomain)") || email.hasSuffix("@\(newerPrivateRelayDomain)")
    }

    /// A fresh subject in Apple's format, `000123.<32 lowercase hex>.0456`.
    public static func makeSubject() -> String {
        RandomToken.appleSubject()
    }

    /// A fresh private relay address under `domain`, e.g. `ugs6qtpehf@privaterelay.appleid.com`.
    public static func makePrivateRelayEmail(domain: String = privateRelayDomain) -> String {
        "\(RandomToken.lowercaseAlphanumeric(10))@\(domain)"
    }
}
