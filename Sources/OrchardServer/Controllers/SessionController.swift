import Accounts
import Foundation
import HTTPTypes
import Hummingbird

/// `GET /v1/session` and `DELETE /v1/session`.
struct SessionController<Context: RequestContext>: Sendable {
    let accounts: Accounts

    struct SessionResponse: ResponseEncodable {
        struct Session: Encodable {
            var createdAt: String
            var expiresAt: String
            enum CodingKeys: String, CodingKey {
                case createdAt = "created_at"
                case expiresAt = "expires_at"
            }
        }
        var session: Session
        var account: AccountDTO

        /// The answer's two members.
        enum CodingKeys: String, CodingKey {
            case session, account
        }

        /// Both members in nested containers rather than as nested values (see ``AccountDTO/encode(into:)``).
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            var times = container.nestedContainer(keyedBy: Session.CodingKeys.self, forKey: .session)
            try times.encode(session.createdAt, forKey: .createdAt)
            try times.encode(session.expiresAt, forKey: .expiresAt)
            var fields = container.nestedContainer(keyedBy: AccountDTO.CodingKeys.self, forKey: .account)
            try account.encode(into: &fields)
        }
    }

    /// Adds the routes.
    func addRoutes(to routes: OrchardRoutes<Context>) {
        routes.add(.get, "/v1/session", .session, use: show)
        routes.add(.delete, "/v1/session", .endsSession, use: signOut)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> SessionResponse {
        let info = try await accounts.session(token: try Self.token(request), recent: true)
        return SessionResponse(
            session: .init(createdAt: RFC3339.string(info.createdAt), expiresAt: RFC3339.string(info.expiresAt)),
            account: AccountDTO(info.account)
        )
    }

    @Sendable func signOut(_ request: Request, context: Context) async throws -> Response {
        try await accounts.signOut(token: try Self.token(request))
        return Response(status: .noContent)
    }

    /// The bearer or cookie token, or `session_invalid`.
    static func token(_ request: Request) throws -> String {
        guard let (token, _) = request.sessionToken else {
            throw AccountsError(.sessionInvalid, "no session token (Authorization: Bearer, or the __Host-orchard_session cookie)")
        }
        return token
    }
}
