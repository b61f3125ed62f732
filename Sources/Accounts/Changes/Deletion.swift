public import Foundation

/// Why an account was deleted (`reason` of the `account.deleted` webhook).
public enum DeletionReason: String, Sendable, CaseIterable {
    /// The user asked (`DELETE /v1/account`).
    case userRequest = "user_request"
    /// An operator ran `orchard accounts delete`.
    case byOperator = "operator"
    /// Apple said the user revoked consent, under the `delete` policy.
    case consentRevoked = "consent_revoked"
    /// Apple said the user deleted their Apple ID.
    case appleAccountDeleted = "apple_account_deleted"
}

/// What became of the user's authorization at Apple (`apple_revocation` in the API).
public enum AppleRevocationOutcome: String, Sendable {
    /// Apple accepted the revocation.
    case revoked
    /// Apple could not be reached or refused for now; the background worker retries until it accepts.
    case pending
    /// No token was held: the user must revoke by hand at Apple's page.
    case manualRequired = "manual_required"
}

/// The answer to a deletion.
public struct DeletionResult: Sendable {
    /// Apple's page that tells a user how to stop using Sign in with Apple with an app (TN3194).
    public static let manualRevocationURL = URL(string: "https://support.apple.com/en-us/102571")!

    /// What became of the authorization at Apple.
    public var appleRevocation: AppleRevocationOutcome
    /// Apple's page for revoking by hand, with ``AppleRevocationOutcome/manualRequired``.
    public var manualRevocationURL: URL?
}
