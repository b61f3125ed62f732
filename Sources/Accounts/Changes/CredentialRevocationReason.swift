/// Why an account's Apple credential was marked revoked while the account stays: the `reason` of the
/// `credential_revoked` history event and of the `account.credential_revoked` webhook.
public enum CredentialRevocationReason: String, Sendable, Equatable {
    /// Apple's `consent-revoked` notification, under the `sign-out` policy.
    case consentRevoked = "consent_revoked"
    /// The daily refresh-token validation: Apple answered `invalid_grant`.
    case invalidGrant = "invalid_grant"
}
