public import Foundation

/// A lifecycle event the app's other backends are told about. It carries Orchard's opaque account id and never an
/// Apple subject, an email or a token.
public struct WebhookEvent: Sendable, Equatable {
    /// `account.deleted`, `account.credential_revoked`, `account.email_forwarding_changed` or `account.transferred`.
    public var type: String
    /// The event's id (the `webhook-id` header).
    public var id: String
    /// When it happened.
    public var occurredAt: Date
    /// Orchard's account id.
    public var accountID: String
    /// Why (deletions and revocations).
    public var reason: String?
    /// The new forwarding state (forwarding changes).
    public var emailForwarding: EmailForwarding?

    /// Creates an event.
    public init(type: String, id: String, occurredAt: Date, accountID: String, reason: String? = nil, emailForwarding: EmailForwarding? = nil) {
        self.type = type
        self.id = id
        self.occurredAt = occurredAt
        self.accountID = accountID
        self.reason = reason
        self.emailForwarding = emailForwarding
    }

    /// The JSON body: `{"type", "id", "occurred_at", "account_id", "reason"?, "email_forwarding"?}`.
    public var body: String {
        var object: [String: String] = [
            "type": type, "id": id, "account_id": accountID,
            "occurred_at": occurredAt.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: false)),
        ]
        if let reason { object["reason"] = reason }
        if let emailForwarding { object["email_forwarding"] = emailForwarding.rawValue }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
