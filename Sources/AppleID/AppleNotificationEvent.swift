public import Foundation

/// The `events` claim of an Apple server-to-server notification: what happened, to whom, and when.
///
/// The subject and the email are ``Redacted``, so printing an event never shows them.
public struct AppleNotificationEvent: Codable, Sendable, Equatable {
    /// `type`: what happened.
    public var type: AppleNotificationType
    /// `sub`: the user's Apple subject.
    public var sub: Redacted<String>
    /// `event_time`: when it happened, in milliseconds since 1970.
    public var eventTimeMilliseconds: Int
    /// `email`: the user's (private relay) address, sent with the email events.
    public var email: Redacted<String>?
    /// `is_private_email`: whether ``email`` is a private relay address (sent as a boolean or a string).
    public var isPrivateEmail: Bool?

    /// When it happened.
    public var eventTime: Date { Date(timeIntervalSince1970: Double(eventTimeMilliseconds) / 1000) }

    private enum CodingKeys: String, CodingKey {
        case type, sub, email
        case eventTime = "event_time"
        case isPrivateEmail = "is_private_email"
    }
}

extension AppleNotificationEvent {
    /// Reads the event as Apple sends it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decode(AppleNotificationType.self, forKey: .type)
        sub = Redacted(try container.decode(String.self, forKey: .sub))
        guard let milliseconds = try container.decodeLenientIntIfPresent(forKey: .eventTime) else {
            throw DecodingError.keyNotFound(
                CodingKeys.eventTime,
                .init(codingPath: container.codingPath, debugDescription: "The event carries no event_time.")
            )
        }
        eventTimeMilliseconds = milliseconds
        email = try container.decodeIfPresent(String.self, forKey: .email).map(Redacted.init)
        isPrivateEmail = try container.decodeLenientBoolIfPresent(forKey: .isPrivateEmail)
    }

    /// Writes the event in Apple's shape; the redacted values are written in full.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(sub.value, forKey: .sub)
        try container.encode(eventTimeMilliseconds, forKey: .eventTime)
        try container.encodeIfPresent(email?.value, forKey: .email)
        try container.encodeIfPresent(isPrivateEmail, forKey: .isPrivateEmail)
    }
}
