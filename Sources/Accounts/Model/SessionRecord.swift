public import Foundation

/// A session as the store holds it: only the SHA-256 of its token, never the token.
public struct SessionRecord: Sendable, Equatable {
    /// SHA-256 (lowercase hex) of the bearer token.
    public var tokenHash: String
    /// The account it belongs to.
    public var accountID: String
    /// When it was created (sign-in).
    public var createdAt: Date
    /// When it stops working at the latest.
    public var expiresAt: Date
    /// When it was ended early, if it was.
    public var endedAt: Date?
    /// Why it was ended early.
    public var endReason: SessionEndReason?

    /// Creates a record.
    public init(
        tokenHash: String,
        accountID: String,
        createdAt: Date,
        expiresAt: Date,
        endedAt: Date? = nil,
        endReason: SessionEndReason? = nil
    ) {
        self.tokenHash = tokenHash
        self.accountID = accountID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.endedAt = endedAt
        self.endReason = endReason
    }
}
