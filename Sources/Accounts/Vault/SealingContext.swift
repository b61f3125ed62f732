/// The additional authenticated data each sealed value is bound to: the record and the field it belongs to, so a
/// sealed value copied into another row or column does not open. Every seal and open names its context here.
public enum SealingContext {
    /// A sealed column of an account.
    public enum AccountField: String, Sendable, CaseIterable {
        /// Apple's subject.
        case subject
        /// The email Apple's signed token gave.
        case email
        /// The first authorization's name (JSON).
        case name
        /// Apple's refresh token.
        case refreshToken = "refresh_token"
        /// Apple's access token.
        case accessToken = "access_token"
        /// Apple's latest identity token.
        case identityToken = "identity_token"
        /// The transfer identifier an export obtained (`transfer_exports`).
        case transferSub = "transfer_sub"
    }

    /// `field` of the account `accountID`.
    public static func account(_ accountID: String, _ field: AccountField) -> String {
        "account:\(accountID):\(field.rawValue)"
    }

    /// The device label of the session `sessionID` (its public id).
    public static func session(_ sessionID: String) -> String {
        "session:\(sessionID):device"
    }

    /// The device label of the history event `eventID`.
    public static func historyEvent(_ eventID: String) -> String {
        "history:\(eventID):device"
    }

    /// The token of the revocation outbox row `id`.
    public static func revocation(_ id: String) -> String {
        "revocation:\(id):token"
    }

    /// The event of the inbox row of the notification `jti`.
    public static func notification(_ jti: String) -> String {
        "notification:\(jti):event"
    }

    /// The private key of the access-token signing key `keyID`.
    public static func signingKey(_ keyID: String) -> String {
        "signing_key:\(keyID):private_key"
    }

    /// The nonce of the web-flow state whose hash is `stateHash`.
    public static func webFlowState(_ stateHash: String) -> String {
        "web_flow:\(stateHash):nonce"
    }
}
