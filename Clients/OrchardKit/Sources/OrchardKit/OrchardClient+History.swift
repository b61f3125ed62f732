public import Foundation

/// One event of the account's history (`GET /v1/account/events`): why the user was signed in or out, what Apple said.
public struct AccountEvent: Sendable, Hashable, Identifiable, Decodable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable, Decodable {
        /// A sign-in; ``AccountEvent/device`` is its label.
        case signedIn = "signed_in"
        /// A sign-out; ``AccountEvent/reason`` is `user`, `other_device` or `expired`.
        case signedOut = "signed_out"
        /// Apple's daily verdict on the grant: `valid` or `invalid_grant` (one event per day and verdict).
        case appleValidation = "apple_validation"
        /// Apple's grant ended (`consent_revoked` or `invalid_grant`): signed out everywhere.
        case credentialRevoked = "credential_revoked"
        /// Apple's email forwarding turned `enabled` or `disabled`.
        case emailForwardingChanged = "email_forwarding_changed"
        /// The app moved to another developer team, and the account with it.
        case transferred
        case imported
    }

    /// `evt_…`.
    public var id: String
    /// What happened; an event type this OrchardKit does not know yet is `nil`, with its name in ``typeName``.
    public var kind: Kind?
    /// The event type as Orchard named it.
    public var typeName: String
    /// When.
    public var occurredAt: Date
    /// The session it concerns, as ``DeviceSession/id``.
    public var sessionID: String?
    /// The device label of a sign-in.
    public var device: String?
    /// Why, in Orchard's words (see ``Kind``).
    public var reason: String?

    enum CodingKeys: String, CodingKey {
        case id, type, device, reason
        case occurredAt = "occurred_at"
        case sessionID = "session_id"
    }

    /// Reads an event as Orchard sends it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        typeName = try container.decode(String.self, forKey: .type)
        kind = Kind(rawValue: typeName)
        occurredAt = try container.decode(Date.self, forKey: .occurredAt)
        sessionID = try container.decodeIfPresent(String.self, forKey: .sessionID)
        device = try container.decodeIfPresent(String.self, forKey: .device)
        reason = try container.decodeIfPresent(String.self, forKey: .reason)
    }
}

/// A page of the account's history, newest first.
public struct AccountEventPage: Sendable, Hashable, Decodable {
    /// The events.
    public var events: [AccountEvent]
    /// Pass to ``OrchardClient/events(limit:before:)`` as `before` for the older events; `nil` on the last page.
    public var next: String?
}

extension OrchardClient {
    /// A page of the signed-in account's history, newest first: sign-ins and sign-outs (and why), Apple's verdicts.
    ///
    /// - Parameters:
    ///   - limit: At most this many events (1 to 100).
    ///   - before: The previous page's ``AccountEventPage/next``, for the events older than it.
    public func events(limit: Int = 50, before: String? = nil) async throws(OrchardError) -> AccountEventPage {
        let stored = try storedSession()
        var query = [URLQueryItem(name: "limit", value: String(limit))]
        if let before { query.append(URLQueryItem(name: "before", value: before)) }
        return try await call("GET", "/v1/account/events", bearer: stored.token, query: query)
    }
}
