public import Foundation

/// What an ``AccountView`` is opened from: the account's shown fields as stored, the personal ones sealed.
///
/// The session check reads only these, not the whole ``AccountRecord``: Apple's sealed tokens, the longest values of
/// the row, are never shown, so the session check does not copy them out of the database (`Benchmarks/run`'s
/// `GET /v1/session` guards this).
public struct SealedAccountView: Sendable, Equatable {
    /// Orchard's account id.
    public var id: String
    /// The Apple subject, sealed.
    public var sealedSubject: String
    /// The email, sealed.
    public var sealedEmail: String?
    /// Whether the email is a private relay address.
    public var isPrivateEmail: Bool
    /// Whether Apple forwards mail to it.
    public var emailForwarding: EmailForwarding
    /// The name as JSON, sealed.
    public var sealedName: String?
    /// What Orchard knows of the grant at Apple.
    public var appleCredential: AppleCredentialState
    /// The last successful validation at Apple.
    public var lastValidatedAt: Date?
    /// When the account was created.
    public var createdAt: Date
    /// The Apple client id the account last signed in with (an access token's `client_id`).
    public var clientID: String
    /// The organization of a Managed Apple Account.
    public var orgID: String?
    /// Whether Apple verified the email.
    public var emailVerified: Bool

    /// Creates a sealed view.
    public init(
        id: String,
        sealedSubject: String,
        sealedEmail: String?,
        isPrivateEmail: Bool,
        emailForwarding: EmailForwarding,
        sealedName: String?,
        appleCredential: AppleCredentialState,
        lastValidatedAt: Date?,
        createdAt: Date,
        clientID: String,
        orgID: String? = nil,
        emailVerified: Bool = true
    ) {
        self.id = id
        self.sealedSubject = sealedSubject
        self.sealedEmail = sealedEmail
        self.isPrivateEmail = isPrivateEmail
        self.emailForwarding = emailForwarding
        self.sealedName = sealedName
        self.appleCredential = appleCredential
        self.lastValidatedAt = lastValidatedAt
        self.createdAt = createdAt
        self.clientID = clientID
        self.orgID = orgID
        self.emailVerified = emailVerified
    }
}

extension AccountRecord {
    /// The fields an ``AccountView`` shows.
    public var sealedView: SealedAccountView {
        SealedAccountView(
            id: id,
            sealedSubject: sealedSubject,
            sealedEmail: sealedEmail,
            isPrivateEmail: isPrivateEmail,
            emailForwarding: emailForwarding,
            sealedName: sealedName,
            appleCredential: appleCredential,
            lastValidatedAt: lastValidatedAt,
            createdAt: createdAt,
            clientID: clientID,
            orgID: orgID,
            emailVerified: emailVerified
        )
    }
}
