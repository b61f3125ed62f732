public import AppleID

/// Why a lifecycle operation was refused; each code is one row of the contract's "Failures and their codes".
public struct AccountsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable machine code the API returns (`code` in the problem details).
    public enum Code: String, Sendable, CaseIterable {
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
    }

    /// The machine code.
    public let code: Code
    /// A human-readable reason that never holds a token, an email or a subject.
    public let reason: String
    /// With ``Code/sessionRevoked``: why the session ended.
    public let sessionEndReason: SessionEndReason?

    /// Creates an error.
    public init(_ code: Code, _ reason: String, sessionEndReason: SessionEndReason? = nil) {
        self.code = code
        self.reason = reason
        self.sessionEndReason = sessionEndReason
    }

    /// The lifecycle's failure for a failure on Apple's side: the same code, where both name it; Orchard's own
    /// configuration (a client id no team owns, a client secret that cannot be signed) is an internal error, logged.
    public init(_ error: AppleIDError) {
        let code: Code =
            switch error.code {
            case .identityTokenMalformed: .identityTokenMalformed
            case .identityTokenSignature: .identityTokenSignature
            case .identityTokenIssuer: .identityTokenIssuer
            case .identityTokenAudience: .identityTokenAudience
            case .identityTokenExpired: .identityTokenExpired
            case .nonceMissing: .nonceMissing
            case .nonceMismatch: .nonceMismatch
            case .authorizationCodeRejected: .authorizationCodeRejected
            case .appleClientRejected: .appleClientRejected
            case .appleUnavailable: .appleUnavailable
            case .invalidConfiguration: .internalError
            }
        self.init(code, error.reason)
    }

    /// Any failure on Apple's side as the contract's code: Apple's own errors by ``init(_:)-(AppleIDError)``, anything
    /// else (a transport's error) as `apple_unavailable`.
    public static func fromApple(_ error: any Error) -> AccountsError {
        if let error = error as? AppleIDError { return AccountsError(error) }
        if let error = error as? AccountsError { return error }
        return AccountsError(.appleUnavailable, "Apple could not be reached (\(type(of: error)))")
    }

    /// A storage failure: `storage_unavailable` when the database could not work, `internal_error` for anything else
    /// (a bug, logged by the server; its details never reach the client).
    public static func storage(_ error: any Error) -> AccountsError {
        if let error = error as? AccountsError { return error }
        guard let error = error as? StoreError, error != .conflict else {
            return AccountsError(.internalError, "unexpected storage error: \(String(reflecting: type(of: error)))")
        }
        return AccountsError(.storageUnavailable, "the database is unavailable: \(error.reason)")
    }

    /// Whether two errors carry the same code and session reason.
    public static func == (lhs: AccountsError, rhs: AccountsError) -> Bool {
        lhs.code == rhs.code && lhs.sessionEndReason == rhs.sessionEndReason
    }

    /// `code: reason`.
    public var description: String { "\(code.rawValue): \(reason)" }
}

/// Runs `body`, which talks to the store, turning whatever it throws into the contract's failure
/// (``AccountsError/storage(_:)``; an ``AccountsError`` passes as it is): the one place storage errors are mapped.
func storing<T>(_ body: () async throws -> T) async throws(AccountsError) -> T {
    do {
        return try await body()
    } catch {
        throw AccountsError.storage(error)
    }
}
