import Foundation

/// The claims every check reads, decoded leniently so that each check can report its own failure. Every claim is
/// checked by ``AppleTokenVerifier`` (the times against the injected clock), not by jwt-kit.
struct TokenEnvelope: Decodable, Sendable {
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

    /// Reads what it can; only a payload that is not a JSON object fails.
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
}

/// Claims that hold everything the checks read, so that one decode of the payload gives both.
protocol EnvelopeClaims: Decodable, Sendable {
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
