public import Accounts
public import HTTPTypes

/// Every machine `code` a client can see in a problem-details answer, with its HTTP status and title: the one table
/// from codes to statuses (house style rule 17). Every switch here names every case, so a new code does not compile
/// until it has a status and a title.
public enum ProblemCode: String, Sendable, CaseIterable {
    // The lifecycle's (``Accounts/AccountsError/Code``).
    case invalidRequest = "invalid_request"
    case identityTokenMalformed = "identity_token_malformed"
    case identityTokenSignature = "identity_token_signature"
    case identityTokenIssuer = "identity_token_issuer"
    case identityTokenAudience = "identity_token_audience"
    case identityTokenExpired = "identity_token_expired"
    case nonceMissing = "nonce_missing"
    case nonceMismatch = "nonce_mismatch"
    case nonceReused = "nonce_reused"
    case authorizationCodeRejected = "authorization_code_rejected"
    case subjectMismatch = "subject_mismatch"
    case appleClientRejected = "apple_client_rejected"
    case appleUnavailable = "apple_unavailable"
    case storageUnavailable = "storage_unavailable"
    case sessionInvalid = "session_invalid"
    case sessionRevoked = "session_revoked"
    case notFound = "not_found"
    case notificationInvalid = "notification_invalid"
    case stateInvalid = "state_invalid"
    case internalError = "internal_error"
    // The server's own.
    case payloadTooLarge = "payload_too_large"
    case methodNotAllowed = "method_not_allowed"
    case rateLimited = "rate_limited"
    case csrfRejected = "csrf_rejected"
    case webFlowDisabled = "web_flow_disabled"

    /// The code a lifecycle failure is answered with.
    public init(_ code: AccountsError.Code) {
        self =
            switch code {
            case .invalidRequest: .invalidRequest
            case .identityTokenMalformed: .identityTokenMalformed
            case .identityTokenSignature: .identityTokenSignature
            case .identityTokenIssuer: .identityTokenIssuer
            case .identityTokenAudience: .identityTokenAudience
            case .identityTokenExpired: .identityTokenExpired
            case .nonceMissing: .nonceMissing
            case .nonceMismatch: .nonceMismatch
            case .nonceReused: .nonceReused
            case .authorizationCodeRejected: .authorizationCodeRejected
            case .subjectMismatch: .subjectMismatch
            case .appleClientRejected: .appleClientRejected
            case .appleUnavailable: .appleUnavailable
            case .storageUnavailable: .storageUnavailable
            case .sessionInvalid: .sessionInvalid
            case .sessionRevoked: .sessionRevoked
            case .notFound: .notFound
            case .notificationInvalid: .notificationInvalid
            case .stateInvalid: .stateInvalid
            case .internalError: .internalError
            }
    }

    /// The HTTP status it is answered with (the contract's "Failures and their codes").
    public var status: HTTPResponse.Status {
        switch self {
        case .invalidRequest, .notificationInvalid, .stateInvalid: .badRequest
        case .identityTokenMalformed, .identityTokenSignature, .identityTokenIssuer, .identityTokenAudience, .identityTokenExpired,
            .nonceMissing, .nonceMismatch, .nonceReused, .authorizationCodeRejected, .subjectMismatch, .sessionInvalid, .sessionRevoked:
            .unauthorized
        case .csrfRejected: .forbidden
        case .notFound, .webFlowDisabled: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .payloadTooLarge: .contentTooLarge
        case .rateLimited: .tooManyRequests
        case .internalError: .internalServerError
        case .appleClientRejected: .badGateway
        case .appleUnavailable, .storageUnavailable: .serviceUnavailable
        }
    }

    /// A short, fixed summary of the code (RFC 9457's `title`).
    public var title: String {
        switch self {
        case .invalidRequest: "Invalid request"
        case .identityTokenMalformed: "Identity token malformed"
        case .identityTokenSignature: "Identity token signature invalid"
        case .identityTokenIssuer: "Identity token issuer invalid"
        case .identityTokenAudience: "Identity token audience invalid"
        case .identityTokenExpired: "Identity token expired"
        case .nonceMissing: "Nonce missing"
        case .nonceMismatch: "Nonce mismatch"
        case .nonceReused: "Nonce reused"
        case .authorizationCodeRejected: "Authorization code rejected"
        case .subjectMismatch: "Subject mismatch"
        case .appleClientRejected: "Apple rejected Orchard's client"
        case .appleUnavailable: "Apple unavailable"
        case .storageUnavailable: "Storage unavailable"
        case .sessionInvalid: "Session invalid"
        case .sessionRevoked: "Session revoked"
        case .notFound: "Not found"
        case .notificationInvalid: "Notification invalid"
        case .stateInvalid: "State invalid"
        case .internalError: "Internal error"
        case .payloadTooLarge: "Payload too large"
        case .methodNotAllowed: "Method not allowed"
        case .rateLimited: "Rate limited"
        case .csrfRejected: "Cross-site request rejected"
        case .webFlowDisabled: "Web flow disabled"
        }
    }
}
