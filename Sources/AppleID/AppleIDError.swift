/// The one error of the AppleID module: what went wrong with a token, a notification or a call to Apple.
///
/// ``code`` is the stable machine code of the contract (the server turns it into a problem-details answer);
/// ``reason`` is human text for logs and operators. Neither ever holds a token, a client secret, an email or an
/// Apple subject.
public struct AppleIDError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The machine code of a failure; the raw values are the contract's codes.
    public enum Code: String, Sendable, Equatable, Hashable, CaseIterable {
        /// The token is not three base64url parts, or its header or payload is not the JSON Apple sends.
        case identityTokenMalformed = "identity_token_malformed"
        /// `alg` other than RS256, `kid` unknown after one refetch of Apple's keys, or a bad signature.
        case identityTokenSignature = "identity_token_signature"
        /// `iss` is not `https://appleid.apple.com`.
        case identityTokenIssuer = "identity_token_issuer"
        /// `aud` is not a configured client id, or not the one the request named.
        case identityTokenAudience = "identity_token_audience"
        /// Outside its validity window: `exp` passed, or `iat` ahead of now by more than the leeway.
        case identityTokenExpired = "identity_token_expired"
        /// The identity token carries no `nonce` claim.
        case nonceMissing = "nonce_missing"
        /// The `nonce` claim is neither the expected nonce nor its SHA-256.
        case nonceMismatch = "nonce_mismatch"
        /// Apple's `/auth/token` answered `invalid_grant`: the code or refresh token is used, expired or revoked.
        case authorizationCodeRejected = "authorization_code_rejected"
        /// Apple refused Orchard's own request or client (`invalid_client`, `unauthorized_client`, ...): a configuration fault.
        case appleClientRejected = "apple_client_rejected"
        /// Apple could not be reached, timed out, answered 5xx or 429 or an unreadable body; its keys unreachable with none cached.
        case appleUnavailable = "apple_unavailable"
        /// Orchard's own Apple settings are unusable (a `.p8` that is not a P-256 PKCS#8 key, a secret lifetime out of range).
        case invalidConfiguration = "invalid_configuration"
    }

    /// What went wrong, as a stable machine code.
    public let code: Code
    /// What went wrong, for people: never a token, a secret, an email or a subject.
    public let reason: String
    /// Apple's own error code, when Apple's REST endpoint refused the request.
    public let appleErrorCode: AppleErrorCode?

    /// Creates an error.
    /// - Parameters:
    ///   - code: The machine code.
    ///   - reason: Human text; must not contain a token, secret, email or subject.
    ///   - appleErrorCode: Apple's `error` value, for refusals by Apple's REST endpoints.
    public init(code: Code, reason: String, appleErrorCode: AppleErrorCode? = nil) {
        self.code = code
        self.reason = reason
        self.appleErrorCode = appleErrorCode
    }

    /// Whether trying again later may succeed (Apple unreachable or overloaded), as opposed to a definite refusal.
    public var isTransient: Bool { code == .appleUnavailable }

    /// `code: reason`, safe to log.
    public var description: String {
        if let appleErrorCode {
            return "\(code.rawValue): \(reason) (Apple: \(appleErrorCode.rawValue))"
        }
        return "\(code.rawValue): \(reason)"
    }

    /// The token is not a well-formed JWS with JSON header and payload.
    public static func malformed(_ reason: String) -> Self { Self(code: .identityTokenMalformed, reason: reason) }

    /// The algorithm, key id or signature is not acceptable.
    public static func signature(_ reason: String) -> Self { Self(code: .identityTokenSignature, reason: reason) }

    /// The issuer is not Apple's.
    public static func issuer(_ reason: String) -> Self { Self(code: .identityTokenIssuer, reason: reason) }

    /// The audience is not one of ours, or not the expected one.
    public static func audience(_ reason: String) -> Self { Self(code: .identityTokenAudience, reason: reason) }

    /// The token is outside its validity window.
    public static func expired(_ reason: String) -> Self { Self(code: .identityTokenExpired, reason: reason) }

    /// The token carries no nonce.
    public static func nonceMissing(_ reason: String = "the token carries no nonce claim") -> Self {
        Self(code: .nonceMissing, reason: reason)
    }

    /// The token's nonce is not the expected one.
    public static func nonceMismatch(_ reason: String = "the nonce claim matches neither the nonce nor its SHA-256") -> Self {
        Self(code: .nonceMismatch, reason: reason)
    }

    /// Apple said `invalid_grant` for an authorization code or refresh token.
    public static func authorizationCodeRejected(_ reason: String) -> Self {
        Self(code: .authorizationCodeRejected, reason: reason, appleErrorCode: .invalidGrant)
    }

    /// Apple refused Orchard's request or client with the given code.
    public static func appleClientRejected(_ appleErrorCode: AppleErrorCode, reason: String) -> Self {
        Self(code: .appleClientRejected, reason: reason, appleErrorCode: appleErrorCode)
    }

    /// Apple could not be reached or gave no usable answer; worth retrying later.
    public static func appleUnavailable(_ reason: String) -> Self { Self(code: .appleUnavailable, reason: reason) }

    /// Orchard's own Apple settings are unusable.
    public static func invalidConfiguration(_ reason: String) -> Self { Self(code: .invalidConfiguration, reason: reason) }
}
