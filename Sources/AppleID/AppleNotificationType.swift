/// The kind of change an Apple server-to-server notification reports.
public enum AppleNotificationType: Sendable, Equatable, Hashable, AppleSpelledValue {
    /// `email-enabled`: the user turned email forwarding to their private relay address back on.
    case emailEnabled
    /// `email-disabled`: the user stopped email forwarding to their private relay address.
    case emailDisabled
    /// `consent-revoked`: the user stopped using Sign in with Apple with the app; Apple invalidated its tokens.
    case consentRevoked
    /// `account-delete` (Apple's page also prints `account-deleted`): the user deleted their Apple account.
    case accountDelete
    /// A type Apple does not document yet, kept as sent.
    case unknown(String)

    /// Reads Apple's spelling; both `account-delete` and `account-deleted` are ``accountDelete``.
    public init(rawValue: String) {
        switch rawValue {
        case "email-enabled": self = .emailEnabled
        case "email-disabled": self = .emailDisabled
        case "consent-revoked": self = .consentRevoked
        case "account-delete", "account-deleted": self = .accountDelete
        default: self = .unknown(rawValue)
        }
    }

    /// Apple's spelling (`account-delete` for ``accountDelete``).
    public var rawValue: String {
        switch self {
        case .emailEnabled: "email-enabled"
        case .emailDisabled: "email-disabled"
        case .consentRevoked: "consent-revoked"
        case .accountDelete: "account-delete"
        case .unknown(let value): value
        }
    }
}
