import HTTPTypes
import Hummingbird
import NIOCore

/// The form fields Apple's `/auth/token`, `/auth/revoke` and `/auth/usermigrationinfo` read (`application/x-www-form-urlencoded`), each named
/// as on the wire in `snake_case`.
struct AppleForm: Decodable, Sendable {
    /// `client_id`.
    var clientID: String?
    /// `client_secret`, the ES256 JWT.
    var clientSecret: String?
    /// `grant_type`: `authorization_code` or `refresh_token`.
    var grantType: String?
    /// `code`, for the code exchange.
    var code: String?
    /// `redirect_uri`, for the web flow's code exchange.
    var redirectURI: String?
    /// `refresh_token`, for the refresh grant.
    var refreshToken: String?
    /// `token`, for revocation.
    var token: String?
    /// `token_type_hint`, for revocation.
    var tokenTypeHint: String?
    /// `scope`, for the client-credentials grant (`user.migration`).
    var scope: String?
    /// `sub`, the sending team's subject, for a transfer identifier.
    var sub: String?
    /// `target`, the receiving team's id, for a transfer identifier.
    var target: String?
    /// `transfer_sub`, for the receiving team's exchange.
    var transferSub: String?

    private enum CodingKeys: String, CodingKey {
        case code, token, scope, sub, target
        case transferSub = "transfer_sub"
        case clientID = "client_id"
        case clientSecret = "client_secret"
        case grantType = "grant_type"
        case redirectURI = "redirect_uri"
        case refreshToken = "refresh_token"
        case tokenTypeHint = "token_type_hint"
    }

    /// The largest form the emulator reads.
    static let maximumSize = 64 * 1024

    /// Reads the form from a request: `nil` when the body is too large or not a form encoding; an empty form when the
    /// content type is not `application/x-www-form-urlencoded` (Apple then sees no parameters).
    static func read(from request: Request) async -> AppleForm? {
        var request = request
        guard let buffer = try? await request.collectBody(upTo: maximumSize) else { return nil }
        let contentType = request.headers[.contentType]?.lowercased() ?? ""
        guard contentType.hasPrefix("application/x-www-form-urlencoded") else {
            return AppleForm()
        }
        return try? URLEncodedFormDecoder().decode(AppleForm.self, from: String(buffer: buffer))
    }

    /// The value if present and not empty.
    static func present(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }
}
