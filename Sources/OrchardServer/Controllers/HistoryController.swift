public import Accounts
import Foundation
import Hummingbird

/// `GET /v1/account/events`: the account's history, newest first, a page at a time.
struct HistoryController<Context: RequestContext>: Sendable {
    let accounts: Accounts

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
        let query = request.uri.queryParameters
        // A limit that is no number is out of range: refused as one, after the session is known to be live.
        let limit = query["limit"].map { Int(String($0)) ?? 0 } ?? Accounts.historyDefaultPageSize
        let page = try await accounts.history(token: token, before: query["before"].map(String.init), limit: limit)
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
