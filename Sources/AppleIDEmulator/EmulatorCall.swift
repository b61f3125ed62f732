public import Foundation

/// One request to Apple's endpoints, as the emulator received and answered it.
public struct EmulatorCall: Sendable, Hashable, Codable {
    /// The call's position in the log since the emulator started (clearing the log does not reset it).
    public var sequence: Int
    /// Which endpoint was called.
    public var endpoint: EmulatorEndpoint
    /// When the call arrived, by the emulator's clock.
    public var time: Date
    /// The form's `grant_type`.
    public var grantType: String?
    /// The form's `client_id`.
    public var clientID: String?
    /// The form's `token_type_hint`.
    public var tokenTypeHint: String?
    /// The form's `token` (revocation).
    public var token: String?
    /// The form's `code` (code exchange).
    public var code: String?
    /// The form's `refresh_token` (refresh grant).
    public var refreshToken: String?
    /// The form's `redirect_uri`.
    public var redirectURI: String?
    /// The HTTP status answered; `nil` while the request is held (an injected timeout) or was never answered.
    public var status: Int?
    /// The Apple error code answered, e.g. `invalid_grant`.
    public var error: String?
    /// The emulator's own note on why (Apple says no more than the error code), e.g. `client secret expired`.
    public var detail: String?

    private enum CodingKeys: String, CodingKey {
        case sequence, endpoint, time, code, token, status, error, detail
        case grantType = "grant_type"
        case clientID = "client_id"
        case tokenTypeHint = "token_type_hint"
        case refreshToken = "refresh_token"
        case redirectURI = "redirect_uri"
    }
}
