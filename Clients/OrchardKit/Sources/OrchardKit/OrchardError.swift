/// Orchard's stable problem codes (the `code` of its `application/problem+json` answers).
public enum ProblemCode: Sendable, Hashable {
    case invalidRequest
    case identityTokenMalformed
    case identityTokenSignature
    case identityTokenIssuer
    case identityTokenAudience
    case identityTokenExpired
    case nonceMissing
    case nonceMismatch
    case nonceReused
    case authorizationCodeRejected
    case subjectMismatch
    case appleClientRejected
    case appleUnavailable
    case storageUnavailable
    case sessionInvalid
    case sessionRevoked
    case notFound
    case methodNotAllowed
    case payloadTooLarge
    case rateLimited
    case csrfRejected
    case stateInvalid
    case webFlowDisabled
    case notificationInvalid
    case internalError
    /// A code this version of OrchardKit does not know yet.
    case other(String)

    static let known: [String: ProblemCode] = [
        "invalid_request": .invalidRequest, "identity_token_malformed": .identityTokenMalformed,
        "identity_token_signature": .identityTokenSignature, "identity_token_issuer": .identityTokenIssuer,
        "identity_token_audience": .identityTokenAudience, "identity_token_expired": .identityTokenExpired,
        "nonce_missing": .nonceMissing, "nonce_mismatch": .nonceMismatch, "nonce_reused": .nonceReused,
        "authorization_code_rejected": .authorizationCodeRejected, "subject_mismatch": .subjectMismatch,
        "apple_client_rejected": .appleClientRejected, "apple_unavailable": .appleUnavailable,
        "storage_unavailable": .storageUnavailable, "session_invalid": .sessionInvalid,
        "session_revoked": .sessionRevoked, "not_found": .notFound, "method_not_allowed": .methodNotAllowed,
        "payload_too_large": .payloadTooLarge, "rate_limited": .rateLimited, "csrf_rejected": .csrfRejected,
        "state_invalid": .stateInvalid, "web_flow_disabled": .webFlowDisabled,
        "notification_invalid": .notificationInvalid, "internal_error": .internalError,
    ]

    /// The code for Orchard's `code` string.
    public init(code: String) {
        self = Self.known[code] ?? .other(code)
    }

    /// Orchard's `code` string.
    public var code: String {
        if case .other(let code) = self { return code }
        return Self.known.first { $0.value == self }?.key ?? ""
    }
}

/// Why a call to Orchard failed.
public enum OrchardError: Error, Sendable, Hashable {
    /// Orchard answered with a problem document: its code, the HTTP status, its `detail`, and for
    /// ``ProblemCode/sessionRevoked`` the `reason` (`signed_out`, `apple_credential_revoked`, `account_deleted`).
    case problem(ProblemCode, status: Int, detail: String?, reason: String?)
    /// Orchard could not be reached, or the connection broke.
    case transport(String)
    /// Orchard answered something that is not its API (e.g. a proxy's error page).
    case unexpectedResponse(status: Int)
    /// The call needs a session and none is stored, or the app was signed out while the call waited on Orchard (its
    /// answer is then dropped rather than undo the sign-out).
    case notSignedIn

    /// The problem code, when Orchard answered with one.
    public var problemCode: ProblemCode? {
        if case .problem(let code, _, _, _) = self { return code }
        return nil
    }
}
