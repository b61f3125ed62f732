import Foundation

/// Apple's team access token for app transfer: `POST /auth/token` with `grant_type=client_credentials` and
/// `scope=user.migration` answers `{"access_token", "token_type": "Bearer", "expires_in": 3600}`.
struct AppleTeamAccessToken: Decodable, Sendable {
    var accessToken: String
    var tokenType: String?
    var expiresIn: Int?

    private enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
    }
}

/// The sending team's answer at `/auth/usermigrationinfo`: `{"transfer_sub"}`.
struct AppleTransferSubAnswer: Decodable, Sendable {
    var transferSub: String

    private enum CodingKeys: String, CodingKey {
        case transferSub = "transfer_sub"
    }
}

/// The receiving team's answer at `/auth/usermigrationinfo` for a transfer identifier: the user's subject at this team
/// and, for a private relay address only, the address (`{"sub", "email"?, "is_private_email"?}`).
public struct AppleTransferExchange: Decodable, Sendable, Equatable {
    /// The user's subject at the receiving team.
    public var sub: Redacted<String>
    /// The user's private relay address at the receiving team.
    public var email: Redacted<String>?
    /// Whether ``email`` is a private relay address (a boolean, or the string `"true"`).
    public var isPrivateEmail: Bool?

    /// Creates an answer.
    public init(sub: Redacted<String>, email: Redacted<String>? = nil, isPrivateEmail: Bool? = nil) {
        self.sub = sub
        self.email = email
        self.isPrivateEmail = isPrivateEmail
    }

    private enum CodingKeys: String, CodingKey {
        case sub, email
        case isPrivateEmail = "is_private_email"
    }

    /// Reads Apple's answer; `is_private_email` as a boolean or a string.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        sub = Redacted(try container.decode(String.self, forKey: .sub))
        email = try container.decodeIfPresent(String.self, forKey: .email).map(Redacted.init)
        isPrivateEmail = try container.decodeLenientBoolIfPresent(forKey: .isPrivateEmail)
    }
}
