public import Foundation

/// An account opened for its owner or an operator: what the API calls ACCOUNT.
public struct AccountView: Sendable, Equatable {
    /// A person's name as Apple shares it on the first authorization.
    public struct Name: Sendable, Equatable, Codable {
        /// Given name.
        public var firstName: String?
        /// Family name.
        public var lastName: String?

        /// Creates a name.
        public init(firstName: String?, lastName: String?) {
            self.firstName = firstName
            self.lastName = lastName
        }

        enum CodingKeys: String, CodingKey {
            case firstName = "first_name"
            case lastName = "last_name"
        }
    }

    /// Orchard's opaque account id.
    public var id: String
    /// The Apple subject (shown to its owner; never logged).
    public var appleSub: String
    /// The email Apple shared, if any.
    public var email: String?
    /// Whether the email is a private relay address.
    public var isPrivateEmail: Bool
    /// Whether Apple forwards mail to it.
    public var emailForwarding: EmailForwarding
    /// The name from the first authorization.
    public var name: Name?
    /// When the account was created.
    public var createdAt: Date
    /// What Orchard knows of the grant at Apple.
    public var appleCredential: AppleCredentialState
    /// The last successful validation at Apple.
    public var lastValidatedAt: Date?
    /// The organization of a Managed Apple Account (`org_id`).
    public var orgID: String?
    /// Whether Apple verified the email (`email_verified`).
    public var emailVerified: Bool
}
