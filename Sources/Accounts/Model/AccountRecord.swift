public import Foundation

/// An account as the store holds it: every personal value sealed by the ``TokenVault``, the subject found by its keyed
/// hash.
public struct AccountRecord: Sendable, Equatable {
    /// Orchard's own opaque id, which the app keys its data by.
    public var id: String
    /// HMAC-SHA-256 of the Apple subject under a key derived from the vault key (see ``TokenVault/subjectHash(_:)``).
    public var subjectHash: String
    /// The Apple subject, sealed.
    public var sealedSubject: String
    /// The email Apple shared, sealed.
    public var sealedEmail: String? {
        didSet { if sealedEmail == nil { emailHash = nil } }
    }
    /// The keyed hash of the lowercased email, beside the subject's under the same keys, by which an operator finds the
    /// account (``TokenVault/emailHash(_:)``); set with ``setEmail(_:vault:)``.
    public var emailHash: String?
    /// Whether the email is an Apple private relay address.
    public var isPrivateEmail: Bool
    /// Whether Apple forwards mail to the relay address.
    public var emailForwarding: EmailForwarding
    /// The name from the first authorization (JSON `{"first_name", "last_name"}`), sealed.
    public var sealedName: String?
    /// The client id (the identity token's `aud`) the tokens were issued to; refresh and revoke must use it.
    public var clientID: String
    /// Apple's refresh token, sealed.
    public var sealedRefreshToken: String?
    /// Apple's latest access token, sealed.
    public var sealedAccessToken: String?
    /// Apple's latest identity token, sealed.
    public var sealedIdentityToken: String?
    /// What Orchard knows of the user's grant at Apple.
    public var appleCredential: AppleCredentialState
    /// The last successful validation at Apple (a code exchange or a refresh-token validation).
    public var lastValidatedAt: Date?
    /// When the refresh token is next due for validation.
    public var nextValidationAt: Date?
    /// When the account was created.
    public var createdAt: Date
    /// When the account last changed.
    public var updatedAt: Date
    /// The latest grant: the last successful code exchange (a daily validation is no grant). `nil` for an account
    /// that has had none in this installation, or that predates the column: its creation stands in then.
    public var grantedAt: Date?
    /// The identity token's `org_id`: the organization of a Managed Apple Account (Apple School or Business Manager).
    public var orgID: String?
    /// The identity token's `email_verified` (absent counts as true); an unverified email is never used to match.
    public var emailVerified: Bool

    /// The latest grant, or the creation when none is recorded: what a late notification is compared with.
    public var latestGrant: Date { grantedAt ?? createdAt }

    /// Creates a record.
    public init(
        id: String,
        subjectHash: String,
        sealedSubject: String,
        sealedEmail: String?,
        isPrivateEmail: Bool,
        emailForwarding: EmailForwarding,
        sealedName: String?,
        clientID: String,
        sealedRefreshToken: String?,
        sealedAccessToken: String?,
        sealedIdentityToken: String?,
        appleCredential: AppleCredentialState,
        lastValidatedAt: Date?,
        nextValidationAt: Date?,
        createdAt: Date,
        updatedAt: Date,
        grantedAt: Date? = nil,
        orgID: String? = nil,
        emailVerified: Bool = true,
        emailHash: String? = nil
    ) {
        self.id = id
        self.subjectHash = subjectHash
        self.sealedSubject = sealedSubject
        self.sealedEmail = sealedEmail
        self.isPrivateEmail = isPrivateEmail
        self.emailForwarding = emailForwarding
        self.sealedName = sealedName
        self.clientID = clientID
        self.sealedRefreshToken = sealedRefreshToken
        self.sealedAccessToken = sealedAccessToken
        self.sealedIdentityToken = sealedIdentityToken
        self.appleCredential = appleCredential
        self.lastValidatedAt = lastValidatedAt
        self.nextValidationAt = nextValidationAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.grantedAt = grantedAt
        self.orgID = orgID
        self.emailVerified = emailVerified
        self.emailHash = emailHash
    }

    /// Seals the email and keeps its lookup hash beside it.
    public mutating func setEmail(_ email: String, vault: TokenVault) throws {
        sealedEmail = try vault.seal(email, context: SealingContext.account(id, .email))
        emailHash = vault.emailHash(email)
    }
}
