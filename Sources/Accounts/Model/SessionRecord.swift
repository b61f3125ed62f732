public import Foundation

/// A session as the store holds it: only the SHA-256 of its token, never the token.
public struct SessionRecord: Sendable, Equatable {
    /// Its public id, `sess_` and random characters (never derived from the token): what `GET /v1/sessions` shows.
    public var id: String
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
    /// The device label given at sign-in, sealed under ``SealingContext/session(_:)``.
    public var sealedDevice: String?
    /// The last session check, to the minute (written at most once a minute).
    public var lastSeenAt: Date?
    /// The Apple client id of the sign-in that created it (what its access tokens carry); `nil` for a session created
    /// before Orchard kept it, whose account's client id stands in.
    public var clientID: String?

    /// Creates a record.
    public init(
        id: String,
        tokenHash: String,
        accountID: String,
        createdAt: Date,
        expiresAt: Date,
        endedAt: Date? = nil,
        endReason: SessionEndReason? = nil,
        sealedDevice: String? = nil,
        lastSeenAt: Date? = nil,
        clientID: String? = nil
    ) {
        self.id = id
        self.tokenHash = tokenHash
        self.accountID = accountID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.endedAt = endedAt
        self.endReason = endReason
        self.sealedDevice = sealedDevice
        self.lastSeenAt = lastSeenAt
        self.clientID = clientID
    }
}
