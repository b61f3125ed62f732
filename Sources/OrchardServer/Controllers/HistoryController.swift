public import Accounts
import Foundation
import Hummingbird

/// `GET /v1/account/events`: the account's history, newest first, a page at a time.
struct HistoryController<Context: RequestContext>: Sendable {
    let accounts: AccountDesk

    struct EventsResponse: ResponseEncodable {
        var events: [HistoryEventDTO]
        var next: String?
    }

    /// Adds the route.
    func addRoutes(to routes: OrchardRoutes<Context>) {
        routes.add(.get, "/v1/account/events", .session, use: list)
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> EventsResponse {
        let token = try SessionController<Context>.token(request)
        // A limit out of range is refused after the session is known to be live.
        let (before, limit) = request.pageQuery(defaultLimit: AccountDesk.historyDefaultPageSize)
        let page = try await accounts.history(token: token, before: before, limit: limit)
        return EventsResponse(events: page.events.map(HistoryEventDTO.init), next: page.next)
    }
}

/// EVENT of the contract.
public struct HistoryEventDTO: Encodable, Sendable {
    public var id: String
    public var type: String
    public var occurredAt: String
    public var sessionID: String?
    public var device: String?
    public var reason: String?

    public init(_ entry: HistoryEntry) {
        id = entry.id
        type = entry.kind.rawValue
        occurredAt = RFC3339.string(entry.occurredAt)
        sessionID = entry.sessionID
        device = entry.device
        reason = entry.reason
    }

    enum CodingKeys: String, CodingKey {
        case id, type, device, reason
        case occurredAt = "occurred_at"
        case sessionID = "session_id"
    }
}
