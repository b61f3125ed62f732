public import Accounts
public import HTTPTypes

/// Every machine `code` a client can see in a problem-details answer, with its HTTP status and title: the one table
/// from codes to statuses (house style rule 17). Every switch here names every case, so a new code does not compile
/// until it has a status and a title. The lifecycle's codes are ``Accounts/AccountsError/Code``'s,
/// named once there.
public enum ProblemCode: Sendable, Hashable, CaseIterable {
    /// A lifecycle failure's code, under its own name.
    case lifecycle(AccountsError.Code)
    /// A body past the server's limit.
    case payloadTooLarge
    /// A method the path does not answer.
    case methodNotAllowed
    /// Past the client's request budget.
    case rateLimited
    /// A cookie-authenticated request from another site.
    case csrfRejected
    /// A web-flow route while the web flow is not configured.
    case webFlowDisabled
    /// An operator route without a valid operator token or console cookie (which one is wrong is not said).
    case operatorUnauthorized

    /// Every code: the lifecycle's, then the server's own.
    public static var allCases: [ProblemCode] {
        AccountsError.Code.allCases.map(ProblemCode.lifecycle) + [
            .payloadTooLarge, .methodNotAllowed, .rateLimited, .csrfRejected, .webFlowDisabled, .operatorUnauthorized,
        ]
    }

    /// The code a client sees.
    public var rawValue: String {
        switch self {
        case .lifecycle(let code): code.rawValue
        case .payloadTooLarge: "payload_too_large"
        case .methodNotAllowed: "method_not_allowed"
        case .rateLimited: "rate_limited"
        case .csrfRejected: "csrf_rejected"
        case .webFlowDisabled: "web_flow_disabled"
        case .operatorUnauthorized: "operator_unauthorized"
        }
    }

    /// The code a lifecycle failure is answered with.
    public init(_ code: AccountsError.Code) {
        self = .lifecycle(code)
    }

    /// The lifecycle's `invalid_request`.
    public static let invalidRequest = ProblemCode.lifecycle(.invalidRequest)
    /// The lifecycle's `internal_error`.
    public static let internalError = ProblemCode.lifecycle(.internalError)

    /// The HTTP status it is answered with (the contract's "Failures and their codes").
    public var status: HTTPResponse.Status {
        switch self {
        case .lifecycle(let code): code.status
        case .csrfRejected: .forbidden
        case .webFlowDisabled: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .payloadTooLarge: .contentTooLarge
        case .rateLimited: .tooManyRequests
        case .operatorUnauthorized: .unauthorized
        }
    }

    /// A short, fixed summary of the code (RFC 9457's `title`).
    public var title: String {
        switch self {
        case .lifecycle(let code): code.title
        case .payloadTooLarge: "Payload too large"
        case .methodNotAllowed: "Method not allowed"
        case .rateLimited: "Rate limited"
        case .csrfRejected: "Cross-site request rejected"
        case .webFlowDisabled: "Web flow disabled"
        case .operatorUnauthorized: "Operator unauthorized"
        }
    }
}

extension AccountsError.Code {
    /// The HTTP status a lifecycle failure is answered with.
    var status: HTTPResponse.Status {
        switch self {
        case .invalidRequest, .notificationInvalid, .stateInvalid: .badRequest
        case .identityTokenMalformed, .identityTokenSignature, .identityTokenIssuer, .identityTokenAudience, .identityTokenExpired,
            .nonceMissing, .nonceMismatch, .nonceReused, .authorizationCodeRejected, .subjectMismatch, .sessionInvalid, .sessionRevoked:
            .unauthorized
        case .notFound: .notFound
        case .internalError: .internalServerError
        case .appleClientRejected: .badGateway
        case .appleUnavailable, .storageUnavailable: .serviceUnavailable
        }
    }

    /// Its RFC 9457 `title`.
    var title: String {
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
        }
    }
}
