extension EmulatorControlController {
    /// `POST /_emulator/authorize`.
    struct AuthorizeRequest: Decodable {
        /// Defaults to the first of the emulator's client ids.
        var clientID: String?
        var nonce: String?
        var redirectURI: String?
        var user: UserInput?

        private enum CodingKeys: String, CodingKey {
            case nonce, user
            case clientID = "client_id"
            case redirectURI = "redirect_uri"
        }
    }

    /// The optional `user` of an authorize request: a known `sub` signs that user in again.
    struct UserInput: Decodable {
        var sub: String?
        var email: String?
        var firstName: String?
        var lastName: String?
        var isPrivateEmail: Bool?
        var emailVerified: Bool?
        var orgID: String?
        /// The domain of a new user's relay address: `privaterelay.appleid.com` or `private.icloud.com`.
        var relayDomain: String?

        private enum CodingKeys: String, CodingKey {
            case sub, email
            case firstName = "first_name"
            case lastName = "last_name"
            case isPrivateEmail = "is_private_email"
            case emailVerified = "email_verified"
            case orgID = "org_id"
            case relayDomain = "relay_domain"
        }
    }

    /// The answer to `POST /_emulator/authorize`.
    struct AuthorizeResponse: Encodable {
        /// Apple's web-flow `user` JSON, sent on a first authorization only.
        struct AppleUser: Encodable {
            var name: [String: String]
            var email: String?
        }

        var identityToken: String
        var authorizationCode: String
        var sub: String
        var email: String?
        var isFirstAuthorization: Bool
        var user: AppleUser?

        /// The answer for `authorization`, with the user as the client's team sees them (`view`).
        init(_ authorization: EmulatedAuthorization, view: EmulatedUser) {
            identityToken = authorization.identityToken
            authorizationCode = authorization.authorizationCode
            sub = view.sub
            email = view.email
            isFirstAuthorization = authorization.isFirstAuthorization
            if authorization.isFirstAuthorization {
                var name: [String: String] = [:]
                name["firstName"] = view.firstName
                name["lastName"] = view.lastName
                user = AppleUser(name: name, email: view.email)
            }
        }

        private enum CodingKeys: String, CodingKey {
            case sub, email, user
            case identityToken = "identity_token"
            case authorizationCode = "authorization_code"
            case isFirstAuthorization = "is_first_authorization"
        }
    }

    /// `POST /_emulator/transfer`.
    struct TransferRequest: Decodable {
        var clientID: String
        var toTeam: String

        private enum CodingKeys: String, CodingKey {
            case clientID = "client_id"
            case toTeam = "to_team"
        }
    }

    /// `POST /_emulator/revoke-grant`.
    struct RevokeGrantRequest: Decodable {
        var sub: String
        var clientID: String?

        private enum CodingKeys: String, CodingKey {
            case sub
            case clientID = "client_id"
        }
    }

    /// `POST /_emulator/failures`: one of `status`, `timeout: true`, `apple_error`.
    struct FailureRequest: Decodable {
        var endpoint: String
        var status: Int?
        var timeout: Bool?
        var appleError: String?
        var count: Int?

        private enum CodingKeys: String, CodingKey {
            case endpoint, status, timeout, count
            case appleError = "apple_error"
        }
    }

    /// `POST /_emulator/omit-refresh-token`.
    struct CountRequest: Decodable {
        var count: Int
    }

    /// `POST /_emulator/latency`.
    struct LatencyRequest: Decodable {
        var ms: Int
    }

    /// `POST /_emulator/notifications`.
    struct NotificationRequest: Decodable {
        var type: String
        var sub: String
        /// The notification's `aud`; defaults to the first of the emulator's client ids.
        var clientID: String?
        var email: String?
        var isPrivateEmail: Bool?
        var jti: String?
        var send: Bool?

        private enum CodingKeys: String, CodingKey {
            case type, sub, email, jti, send
            case clientID = "client_id"
            case isPrivateEmail = "is_private_email"
        }
    }

    /// The answer to `POST /_emulator/notifications`.
    struct NotificationResponse: Encodable {
        var payload: String
        var status: Int?
        var error: String?
    }

    /// The answer to `GET /_emulator/calls`.
    struct CallsResponse: Encodable {
        var calls: [EmulatorCall]
    }

    /// The answer to `GET /_emulator/revocations`.
    struct RevocationsResponse: Encodable {
        var revocations: [EmulatorRevocation]
    }
}
