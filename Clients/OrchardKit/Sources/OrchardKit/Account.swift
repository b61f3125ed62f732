public import Foundation

/// An Orchard account, as `GET /v1/session` and `POST /v1/auth/apple` describe it.
public struct Account: Sendable, Hashable, Codable {
    /// Whether Apple's private relay forwards mail to the user.
    public enum EmailForwarding: String, Sendable, Hashable, Codable {
        /// Mail reaches the user.
        case enabled
        /// The user turned forwarding off in their Apple ID settings.
        case disabled
    }

    /// What Orchard last learned of the user's Apple grant.
    public enum AppleCredential: String, Sendable, Hashable, Codable {
        /// Apple accepted the refresh token at the last validation (or the code exchange).
        case valid
        /// Apple said the grant is gone.
        case revoked
        /// Orchard holds no refresh token to ask with.
        case unknown
    }

    /// The name the user shared on their first authorization.
    public struct Name: Sendable, Hashable, Codable {
        /// Given name.
        public var firstName: String?
        /// Family name.
        public var lastName: String?

        /// Creates a name.
        public init(firstName: String? = nil, lastName: String? = nil) {
            self.firstName = firstName
            self.lastName = lastName
        }

        enum CodingKeys: String, CodingKey {
            case firstName = "first_name"
            case lastName = "last_name"
        }
    }

    /// Orchard's id of the account: the key for the app's own data about the user.
    public var id: String
    /// The user's subject at Apple (`ASAuthorizationAppleIDCredential.user`).
    public var appleSub: String
    /// The email from Apple's signed token, when the user shared one.
    public var email: String?
    /// Whether the email is a private-relay address.
    public var isPrivateEmail: Bool
    /// Whether the private relay forwards mail.
    public var emailForwarding: EmailForwarding
    /// The name from the first authorization.
    public var name: Name?
    /// When the account was created.
    public var createdAt: Date
    /// What Orchard last learned of the Apple grant.
    public var appleCredential: AppleCredential
    /// When Apple last confirmed the grant.
    public var lastValidatedAt: Date?
    /// The organization of a Managed Apple Account (Apple School Manager or Apple Business Manager); `nil` for a
    /// personal Apple Account.
    public var orgID: String?
    /// Whether Apple verified ``email``: `false` for some Managed Apple Accounts. Never treat an unverified address as
    /// proof of who the user is.
    public var emailVerified: Bool

    enum CodingKeys: String, CodingKey {
        case id, email, name
        case appleSub = "apple_sub"
        case isPrivateEmail = "is_private_email"
        case emailForwarding = "email_forwarding"
        case createdAt = "created_at"
        case appleCredential = "apple_credential"
        case lastValidatedAt = "last_validated_at"
        case orgID = "org_id"
        case emailVerified = "email_verified"
    }

    /// Reads an account as Orchard sends it; one stored by an earlier OrchardKit, without `email_verified`, reads as
    /// verified (what Orchard answered for it then).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        appleSub = try container.decode(String.self, forKey: .appleSub)
        email = try container.decodeIfPresent(String.self, forKey: .email)
        isPrivateEmail = try container.decode(Bool.self, forKey: .isPrivateEmail)
        emailForwarding = try container.decode(EmailForwarding.self, forKey: .emailForwarding)
        name = try container.decodeIfPresent(Name.self, forKey: .name)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        appleCredential = try container.decode(AppleCredential.self, forKey: .appleCredential)
        lastValidatedAt = try container.decodeIfPresent(Date.self, forKey: .lastValidatedAt)
        orgID = try container.decodeIfPresent(String.self, forKey: .orgID)
        emailVerified = try container.decodeIfPresent(Bool.self, forKey: .emailVerified) ?? true
    }
}

/// What a deletion did at Apple.
public struct AccountDeletion: Sendable, Hashable {
    /// Whether Apple's grant was revoked.
    public enum AppleRevocation: String, Sendable, Hashable {
        /// Apple accepted the revocation.
        case revoked
        /// Apple did not answer in time; Orchard retries until it accepts. Nothing is left for the app to do.
        case pending
        /// Orchard held no token to revoke: the user must remove the app at Apple themselves (``AccountDeletion/manualRevocationURL``).
        case manualRequired = "manual_required"
    }

    /// Whether Apple's grant was revoked.
    public var appleRevocation: AppleRevocation
    /// Where the user removes the app from their Apple ID by hand, when ``appleRevocation`` is ``AppleRevocation/manualRequired``.
    public var manualRevocationURL: URL?
}
