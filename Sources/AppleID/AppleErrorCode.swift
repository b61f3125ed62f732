/// An `error` value from Apple's REST endpoints (`/auth/token`, `/auth/revoke`), as in Apple's `ErrorResponse`.
public enum AppleErrorCode: Sendable, Equatable, Hashable, AppleSpelledValue {
    /// The request is missing a parameter, repeats one, or is otherwise malformed.
    case invalidRequest
    /// Client authentication failed: a wrong or expired client secret, or a client id Apple does not know.
    case invalidClient
    /// The authorization code or refresh token is invalid, expired, used or revoked, or was issued to another client.
    case invalidGrant
    /// The client is not allowed to use this grant type.
    case unauthorizedClient
    /// Apple does not support the grant type sent.
    case unsupportedGrantType
    /// The requested scope is invalid.
    case invalidScope
    /// A value Apple does not document (kept as sent).
    case other(String)

    /// Reads Apple's spelling; unknown values become ``other(_:)``.
    public init(rawValue: String) {
        switch rawValue {
        case "invalid_request": self = .invalidRequest
        case "invalid_client": self = .invalidClient
        case "invalid_grant": self = .invalidGrant
        case "unauthorized_client": self = .unauthorizedClient
        case "unsupported_grant_type": self = .unsupportedGrantType
        case "invalid_scope": self = .invalidScope
        default: self = .other(rawValue)
        }
    }

    /// Apple's spelling, e.g. `invalid_grant`.
    public var rawValue: String {
        switch self {
        case .invalidRequest: "invalid_request"
        case .invalidClient: "invalid_client"
        case .invalidGrant: "invalid_grant"
        case .unauthorizedClient: "unauthorized_client"
        case .unsupportedGrantType: "unsupported_grant_type"
        case .invalidScope: "invalid_scope"
        case .other(let value): value
        }
    }
}
