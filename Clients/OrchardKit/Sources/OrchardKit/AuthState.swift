/// Whether the app has a signed-in user: the one value an app's UI follows (``OrchardClient/states``).
public enum AuthState: Sendable, Hashable {
    /// A session is stored and Orchard last accepted it.
    case signedIn(Account)
    /// No session: the stored one was wiped, for this reason.
    case signedOut(SignOutReason)
}

/// Why the app is signed out.
public enum SignOutReason: String, Sendable, Hashable {
    /// No session was stored (a first launch, or after a wipe by an earlier run).
    case noSession = "no_session"
    /// The user signed out (``OrchardClient/signOut()``), or Orchard says the session was ended by a sign-out.
    case signedOut = "signed_out"
    /// The account was deleted: by the user (``OrchardClient/deleteAccount()``), by an operator, or by Apple.
    case accountDeleted = "account_deleted"
    /// Apple says the user revoked the app: Orchard's daily validation or Apple's notification found out, or on Apple
    /// platforms `getCredentialState` said `revoked` or `credentialRevokedNotification` fired.
    case appleCredentialRevoked = "apple_credential_revoked"
    /// On Apple platforms `getCredentialState` said `notFound`: the Apple ID no longer knows this app.
    case appleCredentialNotFound = "apple_credential_not_found"
    /// Orchard no longer knows the session (it expired).
    case sessionExpired = "session_invalid"
}

/// What Apple's device-side `getCredentialState(forUserID:)` says of the signed-in user.
public enum AppleCredentialState: Sendable, Hashable {
    /// The user is still signed in to the app with their Apple ID.
    case authorized
    /// The user revoked the app: OrchardKit signs out.
    case revoked
    /// The Apple ID does not know this app (or this user): OrchardKit signs out.
    case notFound
    /// The app moved to another developer team; the user signs in again to finish the move.
    case transferred
}

/// Asks Apple's device-side state of a user's credential. ``AppleIDCredentialStateProvider`` is the real one on
/// Apple platforms; tests (and Linux) pass their own.
public protocol CredentialStateProvider: Sendable {
    /// The state of the credential of the Apple user `userID` (``Account/appleSub``).
    func credentialState(forUserID userID: String) async throws -> AppleCredentialState
}
