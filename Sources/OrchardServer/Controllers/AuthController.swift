import Accounts
import AppleID
import Foundation
import HTTPTypes
import Hummingbird

/// `POST /v1/auth/apple/nonce` and `POST /v1/auth/apple`: native sign-in.
struct AuthController<Context: RequestContext>: Sendable {
    let accounts: AccountDesk

    /// The body of `POST /v1/auth/apple`.
    struct SignInBody: Decodable {
        struct User: Decodable {
            struct Name: Decodable {
                var firstName: String?
                var lastName: String?
                enum CodingKeys: String, CodingKey {
                    case firstName = "first_name"
                    case lastName = "last_name"
                }
            }
            var name: Name?
            var email: String?
        }
        var identityToken: String
        var authorizationCode: String
        var nonce: String?
        var clientID: String?
        var user: User?
        var device: String?

        enum CodingKeys: String, CodingKey {
            case identityToken = "identity_token"
            case authorizationCode = "authorization_code"
            case nonce
            case clientID = "client_id"
            case user
            case device
        }
    }

    struct NonceResponse: ResponseEncodable {
        var nonce: String
        var expiresAt: Date
        enum CodingKeys: String, CodingKey {
            case nonce
            case expiresAt = "expires_at"
        }
    }

    struct SignInResponse: ResponseEncodable {
        var session: SessionDTO
        var account: AccountDTO
        var isNewAccount: Bool
        enum CodingKeys: String, CodingKey {
            case session, account
            case isNewAccount = "is_new_account"
        }
    }

    struct SessionDTO: Encodable {
        var token: String
        var expiresAt: Date
        enum CodingKeys: String, CodingKey {
            case token
            case expiresAt = "expires_at"
        }
    }

    /// Adds the routes.
    func addRoutes(to routes: OrchardRoutes<Context>) {
        routes.add(.post, "/v1/auth/apple/nonce", .anonymous, use: issueNonce)
        routes.add(.post, "/v1/auth/apple", .anonymous, use: signIn)
    }

    @Sendable func issueNonce(_ request: Request, context: Context) async throws -> EditedResponse<NonceResponse> {
        let nonce = try await accounts.issueNonce()
        return EditedResponse(status: .created, response: NonceResponse(nonce: nonce.value, expiresAt: nonce.expiresAt))
    }

    @Sendable func signIn(_ request: Request, context: Context) async throws -> SignInResponse {
        let body = try await request.decodeJSON(as: SignInBody.self, context: context)
        guard !body.identityToken.isEmpty else { throw OrchardProblem.invalidRequest("field 'identity_token' must not be empty") }
        guard !body.authorizationCode.isEmpty else {
            throw OrchardProblem.invalidRequest("field 'authorization_code' must not be empty")
        }
        let user = body.user.map {
            SignInRequest.FirstAuthorizationUser(
                firstName: $0.name?.firstName,
                lastName: $0.name?.lastName,
                email: $0.email.map(Redacted.init)
            )
        }
        let result = try await accounts.signIn(
            SignInRequest(
                identityToken: Redacted(body.identityToken),
                authorizationCode: Redacted(body.authorizationCode),
                nonce: body.nonce,
                clientID: body.clientID,
                user: user,
                device: body.device
            ),
            logger: context.logger
        )
        return SignInResponse(
            session: SessionDTO(token: result.sessionToken.value, expiresAt: result.sessionExpiresAt),
            account: AccountDTO(result.account),
            isNewAccount: result.isNewAccount
        )
    }
}
