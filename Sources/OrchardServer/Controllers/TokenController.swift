import Accounts
import AppleID
import Foundation
import HTTPTypes
import Hummingbird

/// `POST /v1/session/token`, `GET /.well-known/jwks.json` and `GET /.well-known/openid-configuration`: signed access
/// tokens for the app's other backends, and the keys that verify them.
struct TokenController<Context: RequestContext>: Sendable {
    let tokens: AccessTokens
    /// Where this server is reached, for the discovery document's `jwks_uri`.
    let publicBase: String

    struct TokenResponse: ResponseEncodable {
        var accessToken: String
        var tokenType = "Bearer"
        var expiresIn: Int

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case tokenType = "token_type"
            case expiresIn = "expires_in"
        }
    }

    struct Discovery: Encodable {
        var issuer: String
        var jwksURI: String
        var algorithms = ["ES256"]

        enum CodingKeys: String, CodingKey {
            case issuer
            case jwksURI = "jwks_uri"
            case algorithms = "id_token_signing_alg_values_supported"
        }
    }

    /// Adds the routes.
    func addRoutes(to routes: OrchardRoutes<Context>) {
        routes.add(.post, "/v1/session/token", .budgetedSession, use: issue)
        routes.add(.get, "/.well-known/jwks.json", use: keySet)
        routes.add(.get, "/.well-known/openid-configuration", use: discovery)
    }

    @Sendable func issue(_ request: Request, context: Context) async throws -> EditedResponse<TokenResponse> {
        let issued = try await tokens.issue(sessionToken: try SessionController<Context>.token(request))
        return EditedResponse(
            headers: [.cacheControl: "no-store"],
            response: TokenResponse(accessToken: issued.token.value, expiresIn: issued.expiresIn)
        )
    }

    @Sendable func keySet(_ request: Request, context: Context) async throws -> Response {
        let body = try await tokens.keys.keySet()
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "max-age=300"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body))
        )
    }

    @Sendable func discovery(_ request: Request, context: Context) async throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = try encoder.encode(Discovery(issuer: tokens.configuration.issuer, jwksURI: publicBase + "/.well-known/jwks.json"))
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "max-age=300"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body))
        )
    }
}
