import Foundation
import JWTKit

/// The claims every check reads, decoded leniently so that each check can report its own failure.
///
/// jwt-kit calls ``verify(using:)`` after a good signature; it does nothing, because the time checks use the injected
/// clock (see ``AppleTokenVerifier``), which jwt-kit's claim verification cannot.
struct TokenEnvelope: JWTPayload {
    /// `iss`, when it is a string.
    var iss: String?
    /// `aud`, as a list (Apple sends a string; an array is read too), when it is a string or strings.
    var aud: [String]?
    /// `exp`, when it is a number.
    var exp: Date?
    /// `iat`, when it is a number.
    var iat: Date?
    /// `nonce`, when it is a string.
    var nonce: String?
    /// `jti`, when it is a string (notifications).
    var jti: String?
    /// Whether the payload has an `events` claim, the mark of a notification.
    var hasEvents: Bool

    private enum CodingKeys: String, CodingKey {
        case iss, aud, exp, iat, nonce, jti, events
    }

    /// Reads what it can; only a payload that is not a JSON object fails.
    /// An envelope of known claims (from claims already decoded strictly).
    init(iss: String, aud: String, exp: Date, iat: Date, nonce: String?, jti: String?, hasEvents: Bool) {
        self.iss = iss
        self.aud = [aud]
        self.exp = exp
        self.iat = iat
        self.nonce = nonce
        self.jti = jti
        self.hasEvents = hasEvents
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iss = try? container.decodeIfPresent(String.self, forKey: .iss)
        if let single = try? container.decodeIfPresent(String.self, forKey: .aud) {
            aud = [single]
        } else {
            aud = try? container.decodeIfPresent([String].self, forKey: .aud)
        }
        exp = try? container.decodeSecondsIfPresent(forKey: .exp)
        iat = try? container.decodeSecondsIfPresent(forKey: .iat)
        nonce = try? container.decodeIfPresent(String.self, forKey: .nonce)
        jti = try? container.decodeIfPresent(String.self, forKey: .jti)
        hasEvents = container.contains(.events)
    }

    /// Writes the claims it read (not used in verification).
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(iss, forKey: .iss)
        try container.encodeIfPresent(aud, forKey: .aud)
        try container.encodeSecondsIfPresent(exp, forKey: .exp)
        try container.encodeSecondsIfPresent(iat, forKey: .iat)
        try container.encodeIfPresent(nonce, forKey: .nonce)
        try container.encodeIfPresent(jti, forKey: .jti)
    }

    /// Deliberately nothing: every claim is checked by ``AppleTokenVerifier`` against the injected clock.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Claims that hold everything the checks read, so that one decode of the payload gives both.
protocol EnvelopeClaims: Codable, Sendable {
    /// The checks' view of these claims.
    var envelope: TokenEnvelope { get }
}

extension AppleIdentityClaims: EnvelopeClaims {
    var envelope: TokenEnvelope {
        TokenEnvelope(iss: iss, aud: aud, exp: exp, iat: iat, nonce: nonce, jti: nil, hasEvents: false)
    }
}

extension AppleNotification: EnvelopeClaims {
    var envelope: TokenEnvelope {
        TokenEnvelope(iss: iss, aud: aud, exp: exp, iat: iat, nonce: nil, jti: jti, hasEvents: true)
    }
}
