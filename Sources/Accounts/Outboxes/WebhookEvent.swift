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

    /// The JSON body: `{"type", "id", "occurred_at", "account_id", "reason"?, "email_forwarding"?}`, keys sorted.
    ///
    /// Encoded with `JSONEncoder` from a fixed shape, not `JSONSerialization` on a dictionary, which bridges to
    /// `NSDictionary` on Linux (`Benchmarks/run`'s `POST /v1/apple/notifications` ingest guards this).
    public var body: String {
        let shape = Body(
            type: type,
            id: id,
            occurredAt: occurredAt.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: false)),
            accountID: accountID,
            reason: reason,
            emailForwarding: emailForwarding?.rawValue
        )
        let data = (try? Self.encoder.encode(shape)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// The one encoder of the JSON Accounts stores or sends (webhook bodies, the inbox's events): keys sorted, slashes
    /// left as they are.
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    private struct Body: Encodable {
        var type: String
        var id: String
        var occurredAt: String
        var accountID: String
        var reason: String?
        var emailForwarding: String?

        enum CodingKeys: String, CodingKey {
            case type, id, reason
            case occurredAt = "occurred_at"
            case accountID = "account_id"
            case emailForwarding = "email_forwarding"
        }
    }
}
