import Accounts
import Foundation
import HTTPTypes
import Hummingbird

/// The caller's session (`GET /v1/session`, `DELETE /v1/session`) and the user's sessions on their devices
/// (`GET /v1/sessions`, `DELETE /v1/sessions/{id}`, `DELETE /v1/sessions`).
struct SessionController<Context: RequestContext>: Sendable {
    let accounts: AccountDesk

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

    struct SessionsResponse: ResponseEncodable {
        var sessions: [SessionDTO]
    }

    struct EndedResponse: ResponseEncodable {
        var ended: Int
    }

    /// Adds the routes.
    func addRoutes(to routes: OrchardRoutes<Context>) {
        routes.add(.get, "/v1/session", .session, use: show)
        routes.add(.delete, "/v1/session", .endsSession, use: signOut)
        routes.add(.get, "/v1/sessions", .session, use: list)
        routes.add(.delete, "/v1/sessions/{id}", .budgetedSession, use: end)
        routes.add(.delete, "/v1/sessions", .budgetedSession, use: endOthers)
    }

    /// The check's answer as first rendered for a session the memory remembers: nothing in it changes while the memory
    /// keeps the entry (whatever changes it drops the entry, and its memo with it), so a session checked again is not
    /// rendered again.
    struct RenderedAnswer: Sendable {
        let response: Response
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let info = try await accounts.session(token: try Self.token(request))
        if let rendered = info.memo?.value(of: RenderedAnswer.self) { return rendered.response }
        let response = try SessionResponse(
            session: .init(createdAt: RFC3339.string(info.createdAt), expiresAt: RFC3339.string(info.expiresAt)),
            account: AccountDTO(info.account)
        ).response(from: request, context: context)
        info.memo?.keep(RenderedAnswer(response: response))
        return response
    }

    @Sendable func signOut(_ request: Request, context: Context) async throws -> Response {
        try await accounts.signOut(token: try Self.token(request))
        return Response(status: .noContent)
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> SessionsResponse {
        let sessions = try await accounts.deviceSessions(token: try Self.token(request))
        return SessionsResponse(
            sessions: sessions.map { SessionDTO($0, showingCurrent: true) }
        )
    }

    @Sendable func end(_ request: Request, context: Context) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        let credential = try Self.credential(request)
        let endedOwn = try await accounts.endSession(token: credential.token, id: id)
        var response = Response(status: .noContent)
        // Ending one's own session from the list is a sign-out in every respect: a cookie caller's browser forgets it.
        if endedOwn, credential.viaCookie { SessionCookie.addClearing(to: &response.headers) }
        return response
    }

    @Sendable func endOthers(_ request: Request, context: Context) async throws -> EndedResponse {
        EndedResponse(ended: try await accounts.endOtherSessions(token: try Self.token(request)))
    }

    /// The bearer or cookie token, or `session_invalid`.
    static func token(_ request: Request) throws -> String {
        try credential(request).token
    }

    /// The bearer or cookie token and whether it came in the cookie, or `session_invalid`.
    static func credential(_ request: Request) throws -> (token: String, viaCookie: Bool) {
        guard let credential = request.sessionToken else {
            throw AccountsError(.sessionInvalid, "no session token (Authorization: Bearer, or the __Host-orchard_session cookie)")
        }
        return credential
    }
}

/// SESSION of the contract (`GET /v1/sessions`); operators see it without `current`.
struct SessionDTO: Encodable {
    var id: String
    var createdAt: String
    var expiresAt: String
    var lastSeenAt: String?
    var device: String?
    var current: Bool?

    init(_ session: DeviceSession, showingCurrent: Bool) {
        id = session.id
        createdAt = RFC3339.string(session.createdAt)
        expiresAt = RFC3339.string(session.expiresAt)
        lastSeenAt = session.lastSeenAt.map(RFC3339.string)
        device = session.device
        current = showingCurrent ? session.current : nil
    }

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
        try container.encodeIfPresent(current, forKey: .current)
    }
}
