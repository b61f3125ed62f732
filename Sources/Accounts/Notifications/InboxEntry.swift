public import Foundation

/// A notification in the inbox, as stored when it arrived.
public struct InboxEntry: Sendable, Equatable {
    /// Apple's `jti`: the key that keeps duplicates out.
    public var jti: String
    /// When it arrived.
    public var receivedAt: Date
    /// The event type as Apple wrote it.
    public var eventType: String
    /// The salted hash of the subject (kept after processing).
    public var subjectDigest: String
    /// The event (subject, email, …) sealed under `notification:JTI:event`, until processed.
    public var sealedEvent: String?
    /// Tries so far.
    public var attempts: Int
    /// The client id it was for (Apple's `aud`), which operators count deliveries by.
    public var clientID: String?

    /// Creates an entry.
    public init(
        jti: String,
        receivedAt: Date,
        eventType: String,
        subjectDigest: String,
        sealedEvent: String?,
        attempts: Int,
        clientID: String? = nil
    ) {
        self.clientID = clientID
        self.jti = jti
        self.receivedAt = receivedAt
        self.eventType = eventType
        self.subjectDigest = subjectDigest
        self.sealedEvent = sealedEvent
        self.attempts = attempts
    }
}
