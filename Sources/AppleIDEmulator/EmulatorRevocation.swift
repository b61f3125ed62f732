public import Foundation

/// One token that `/auth/revoke` accepted (answered 200) from an authenticated client.
public struct EmulatorRevocation: Sendable, Hashable, Codable {
    /// The token sent.
    public var token: String
    /// The `token_type_hint` sent, if any.
    public var tokenTypeHint: String?
    /// The client that asked.
    public var clientID: String
    /// Whether the token still worked, so that this request ended the user's grant; `false` when it was unknown,
    /// already revoked, or issued to another client (Apple answers 200 all the same).
    public var wasValid: Bool
    /// When, by the emulator's clock.
    public var time: Date

    private enum CodingKeys: String, CodingKey {
        case token, time
        case tokenTypeHint = "token_type_hint"
        case clientID = "client_id"
        case wasValid = "was_valid"
    }
}
