import Accounts
import Foundation
import HTTPTypes
import Hummingbird

/// `GET /v1/sessions`, `DELETE /v1/sessions/{id}` and `DELETE /v1/sessions`: a user's sessions on their devices.
struct DeviceSessionsController<Context: RequestContext>: Sendable {
    let accounts: Accounts

    struct SessionsResponse: ResponseEncodable {
        struct Session: Encodable {
            var id: String
            var createdAt: String
            var expiresAt: String
            var lastSeenAt: String?
            var device: String?
            var current: Bool

            enum CodingKeys: String, CodingKey {
                case id, device, current
                case createdAt = "created_at"
                case expiresAt = "expires_at"
                case lastSeenAt = "last_seen_at"
            }

            /// `last_seen_at` is always present (`null` before the first check); `device` only when one was given.
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(id, forKey: .id)
                try container.encode(createdAt, forKey: .createdAt)
                try container.encode(expiresAt, forKey: .expiresAt)
                try container.encode(lastSeenAt, forKey: .lastSeenAt)
                try container.encodeIfPresent(device, forKey: .device)
                try container.encode(current, forKey: .current)
            }
        }
        var sessions: [Session]
    }

    struct EndedResponse: ResponseEncodable {
        var ended: Int
    }

    /// Adds the routes.
    func addRoutes(to routes: OrchardRoutes<Context>) {
        routes.add(.get, "/v1/sessions", .session, use: list)
        routes.add(.delete, "/v1/sessions/{id}", .session, use: end)
        routes.add(.delete, "/v1/sessions", .session, use: endOthers)
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> SessionsResponse {
        let sessions = try await accounts.deviceSessions(token: try SessionController<Context>.token(request))
        return SessionsResponse(
            sessions: sessions.map { session in
                SessionsResponse.Session(
                    id: session.id,
                    createdAt: RFC3339.string(session.createdAt),
                    expiresAt: RFC3339.string(session.expiresAt),
                    lastSeenAt: session.lastSeenAt.map(RFC3339.string),
                    device: session.device,
                    current: session.current
                )
            }
        )
    }

    @Sendable func end(_ request: Request, context: Context) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        try await accounts.endSession(token: try SessionController<Context>.token(request), id: id)
        return Response(status: .noContent)
    }

    @Sendable func endOthers(_ request: Request, context: Context) async throws -> EndedResponse {
        EndedResponse(ended: try await accounts.endOtherSessions(token: try SessionController<Context>.token(request)))
    }
}
