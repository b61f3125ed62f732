public import AppleID
public import Foundation

/// A nonce issued for one sign-in.
public struct IssuedNonce: Sendable {
    /// The raw nonce; the app passes it (or its SHA-256) to Apple and back to Orchard.
    public var value: String
    /// When it stops being accepted.
    public var expiresAt: Date
}

/// The outcome of a successful sign-in.
public struct SignInResult: Sendable {
    /// The new session's bearer token (shown once, stored only as its hash).
    public var sessionToken: Redacted<String>
    /// When the session ends at the latest.
    public var sessionExpiresAt: Date
    /// The account signed in to.
    public var account: AccountView
    /// Whether the account was created by this sign-in.
    public var isNewAccount: Bool
}

/// A live session and its account.
public struct SessionInfo: Sendable {
    /// When the session began.
    public var createdAt: Date
    /// When it ends at the latest.
    public var expiresAt: Date
    /// Its account.
    public var account: AccountView
    /// Beside the session memory's entry when the memory answered, where the answer's rendering may be kept.
    public var memo: SessionMemo?
}
