public import Foundation

/// The claims of an Apple server-to-server notification JWS (the `payload` Apple POSTs).
///
/// Apple encodes ``events`` as a JSON object inside a string; an object is accepted too. Encoding writes the string form,
/// as Apple does.
public struct AppleNotification: Codable, Sendable, Equatable {
    /// `iss`: `https://appleid.apple.com` for a genuine notification.
    public var iss: String = AppleTokenVerifier.appleIssuer
    /// `aud`: the client id the notification is about (one endpoint may serve several).
    public var aud: String
    /// `iat`: when Apple issued it.
    public var iat: Date
    /// `exp`: when it stops being valid (24 hours after `iat`).
    public var exp: Date
    /// `jti`: the notification's unique id; a repeated delivery carries the same one.
    public var jti: String
    /// `events`: what happened.
    public var events: AppleNotificationEvent

    private enum CodingKeys: String, CodingKey {
        case iss, aud, iat, exp, jti, events
    }
}

extension AppleNotification {
    /// Reads the claims; `events` may be a JSON string holding the object, or the object itself.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iss = try container.decode(String.self, forKey: .iss)
        aud = try container.decodeSingleAudience(forKey: .aud)
        iat = try container.decodeSeconds(forKey: .iat)
        exp = try container.decodeSeconds(forKey: .exp)
        jti = try container.decode(String.self, forKey: .jti)
        if let text = try? container.decode(String.self, forKey: .events) {
            do {
                events = try JSONDecoder().decode(AppleNotificationEvent.self, from: Data(text.utf8))
            } catch {
                throw DecodingError.dataCorruptedError(
                    forKey: .events,
                    in: container,
                    debugDescription: "events is a string but not the JSON of an event."
                )
            }
        } else {
            events = try container.decode(AppleNotificationEvent.self, forKey: .events)
        }
    }

    /// Writes the claims as Apple does, with `events` as a JSON string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(iss, forKey: .iss)
        try container.encode(aud, forKey: .aud)
        try container.encodeSeconds(iat, forKey: .iat)
        try container.encodeSeconds(exp, forKey: .exp)
        try container.encode(jti, forKey: .jti)
        let eventsJSON = try JSONEncoder().encode(events)
        try container.encode(String(decoding: eventsJSON, as: UTF8.self), forKey: .events)
    }
}
