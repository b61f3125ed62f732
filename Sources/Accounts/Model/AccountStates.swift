/// What Orchard knows of the user's grant at Apple (`apple_credential` in the API).
public enum AppleCredentialState: String, Sendable, Codable, CaseIterable {
    /// A refresh token is held and Apple accepted it last time.
    case valid
    /// Apple said the grant is gone (`invalid_grant`, or the user revoked consent).
    case revoked
    /// No refresh token is held, so Orchard cannot tell.
    case unknown
}

/// Whether Apple forwards mail to the user's private relay address (`email_forwarding` in the API).
public enum EmailForwarding: String, Sendable, Codable, CaseIterable {
    /// Mail to the relay address reaches the user.
    case enabled
    /// The user turned forwarding off.
    case disabled
}

/// Why a session ended before its lifetime ran out (`reason` of `session_revoked`).
public enum SessionEndReason: String, Sendable, Codable, CaseIterable {
    /// The user signed out.
    case signedOut = "signed_out"
    /// Apple said the user's grant is gone.
    case appleCredentialRevoked = "apple_credential_revoked"
    /// The account was deleted.
    case accountDeleted = "account_deleted"
}
