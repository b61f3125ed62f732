public import Foundation

/// One of an account's live sessions as its owner sees it (`GET /v1/sessions`): never its token.
public struct DeviceSession: Sendable, Equatable {
    /// The public id, `sess_…`.
    public var id: String
    /// When it began (the sign-in).
    public var createdAt: Date
    /// When it ends at the latest.
    public var expiresAt: Date
    /// The last session check, to the minute; `nil` when none came yet.
    public var lastSeenAt: Date?
    /// The label given at sign-in, opened.
    public var device: String?
    /// Whether it is the session that asked.
    public var current: Bool

}
