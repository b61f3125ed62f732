import Accounts
import AppleID
import Foundation
import HTTPTypes
import Hummingbird

/// The operator API, `/admin/v1/…`, on the operator listener only: the same operations the console shows.
struct OperatorAPIController {
    typealias Context = OrchardRequestContext

    let desk: OperatorDesk
    let accounts: AccountDesk
    let operators: Operators
    /// The configured teams, for each notification's `team_id`.
    let teams: [AppleTeam]

    func addRoutes(to group: RouterGroup<Context>, table: RouteTable) {
        func add<Output: ResponseGenerator>(
            _ method: HTTPRequest.Method,
            _ path: String,
            _ handler: @escaping @Sendable (Request, Context) async throws -> Output
        ) {
            group.on(RouterPath(OperatorRoutes.routerPath(path)), method: method, use: handler)
            table.add(method, path)
        }
        add(.get, "/admin/v1/accounts", search)
        add(.get, "/admin/v1/accounts/{id}", account)
        add(.delete, "/admin/v1/accounts/{id}/sessions", endSessions)
        add(.delete, "/admin/v1/accounts/{id}", delete)
        add(.get, "/admin/v1/revocations", revocations)
        add(.get, "/admin/v1/webhooks", webhooks)
        add(.post, "/admin/v1/webhooks/{id}/retry", retry)
        add(.get, "/admin/v1/notifications", notifications)
        add(.get, "/admin/v1/delivery", delivery)
        add(.get, "/admin/v1/audit", audit)
    }

    struct AccountsResponse: ResponseEncodable {
        var accounts: [AccountDTO]
    }

    @Sendable func search(_ request: Request, context: Context) async throws -> AccountsResponse {
        guard let query = request.uri.queryParameters["q"].map(String.init) else {
            throw OrchardProblem.invalidRequest("q is required: an account id, an email or an Apple sub")
        }
        return AccountsResponse(accounts: try await desk.search(query).map(AccountDTO.init))
    }

    struct AccountResponse: ResponseEncodable {
        var account: AccountDTO
        var sessions: [SessionDTO]
        var events: [HistoryEventDTO]
        var transfer: TransferDTO?
    }

    @Sendable func account(_ request: Request, context: Context) async throws -> AccountResponse {
        let detail = try await desk.account(id: try context.parameters.require("id"))
        return AccountResponse(
            account: AccountDTO(detail.account),
            sessions: detail.sessions.map { SessionDTO($0, showingCurrent: false) },
            events: detail.events.map(HistoryEventDTO.init),
            transfer: detail.transfer.map { TransferDTO($0, side: detail.transferSide ?? .export) }
        )
    }

    struct EndedResponse: ResponseEncodable {
        var ended: Int
    }

    @Sendable func endSessions(_ request: Request, context: Context) async throws -> EndedResponse {
        let id = try context.parameters.require("id")
        guard ImportedUser.isAccountID(id) else { throw AccountsError(.notFound, "no account with that id") }
        return EndedResponse(ended: try await accounts.endAllSessions(accountID: id))
    }

    @Sendable func delete(_ request: Request, context: Context) async throws -> AccountController<Context>.DeletionResponse {
        let id = try context.parameters.require("id")
        guard ImportedUser.isAccountID(id) else { throw AccountsError(.notFound, "no account with that id") }
        let result = try await accounts.deleteAccount(id: id, reason: .byOperator, logger: context.logger)
        return AccountController<Context>.DeletionResponse(
            deleted: true,
            appleRevocation: result.appleRevocation.rawValue,
            manualRevocationURL: result.manualRevocationURL?.absoluteString
        )
    }

    struct RevocationsResponse: ResponseEncodable {
        var revocations: [RevocationDTO]
    }

    @Sendable func revocations(_ request: Request, context: Context) async throws -> RevocationsResponse {
        let states: [RevocationQueueState]
        if let text = request.uri.queryParameters["state"] {
            guard let state = RevocationQueueState(rawValue: String(text)) else {
                throw OrchardProblem.invalidRequest("state must be pending, failed or manual_required")
            }
            states = [state]
        } else {
            states = RevocationQueueState.allCases
        }
        var rows: [QueuedRevocation] = []
        for state in states { rows += try await desk.revocations(state) }
        return RevocationsResponse(revocations: rows.sorted { $0.deletedAt > $1.deletedAt }.map(RevocationDTO.init))
    }

    struct DeliveriesResponse: ResponseEncodable {
        var deliveries: [FailedWebhookDTO]
    }

    @Sendable func webhooks(_ request: Request, context: Context) async throws -> DeliveriesResponse {
        if let state = request.uri.queryParameters["state"], state != "failed" {
            throw OrchardProblem.invalidRequest("state must be failed: delivered and pending deliveries are not listed here")
        }
        return DeliveriesResponse(deliveries: try await desk.failedWebhooks().map(FailedWebhookDTO.init))
    }

    struct RetryResponse: ResponseEncodable {
        var id: String
        var state: String
    }

    @Sendable func retry(_ request: Request, context: Context) async throws -> EditedResponse<RetryResponse> {
        let id = try context.parameters.require("id")
        try await desk.retryWebhook(id: id)
        return EditedResponse(status: .accepted, response: RetryResponse(id: id, state: "pending"))
    }

    struct NotificationsResponse: ResponseEncodable {
        var notifications: [NotificationDTO]
        var next: String?
    }

    @Sendable func notifications(_ request: Request, context: Context) async throws -> NotificationsResponse {
        let (before, limit) = request.pageQuery(defaultLimit: 50)
        let page = try await desk.notifications(before: before, limit: limit)
        return NotificationsResponse(notifications: page.items.map { NotificationDTO($0, teamID: teamID(of: $0.clientID)) }, next: page.next)
    }

    struct DeliveryResponse: ResponseEncodable {
        var clients: [DeliveryDTO]
    }

    @Sendable func delivery(_ request: Request, context: Context) async throws -> DeliveryResponse {
        let counts = try await desk.delivery(clientIDs: teams.flatMap(\.clientIDs))
        return DeliveryResponse(clients: counts.map { DeliveryDTO($0, teamID: teamID(of: $0.clientID)) })
    }

    struct AuditResponse: ResponseEncodable {
        var entries: [AuditEntryDTO]
        var next: String?
    }

    @Sendable func audit(_ request: Request, context: Context) async throws -> AuditResponse {
        let (before, limit) = request.pageQuery(defaultLimit: 50)
        let page = try await operators.audit(before: before, limit: limit)
        return AuditResponse(entries: page.items.map(AuditEntryDTO.init), next: page.next)
    }

    func teamID(of clientID: String?) -> String? {
        guard let clientID else { return nil }
        return teams.first { $0.clientIDs.contains(clientID) }?.teamID
    }
}

/// Route paths as the contract writes them (`{id}`) and as Hummingbird's router takes them (`:id`).
enum OperatorRoutes {
    static func routerPath(_ path: String) -> String {
        path.split(separator: "/").map { segment in
            segment.hasPrefix("{") && segment.hasSuffix("}") ? ":" + segment.dropFirst().dropLast() : segment
        }.joined(separator: "/")
    }
}

/// An account's app-transfer state.
struct TransferDTO: Encodable {
    var side: String
    var state: String
    var attempts: Int
    var lastError: String?
    var updatedAt: String

    init(_ record: TransferRecord, side: TransferSide) {
        self.side = side == .export ? "sending" : "receiving"
        state = record.state.rawValue
        attempts = record.attempts
        lastError = record.lastError
        updatedAt = RFC3339.string(record.updatedAt)
    }

    enum CodingKeys: String, CodingKey {
        case side, state, attempts
        case lastError = "last_error"
        case updatedAt = "updated_at"
    }
}

struct RevocationDTO: Encodable {
    var accountID: String?
    var deletedAt: String
    var state: String
    var attempts: Int
    var nextAttemptAt: String?
    var lastError: String?

    init(_ row: QueuedRevocation) {
        accountID = row.accountID
        deletedAt = RFC3339.string(row.deletedAt)
        state = row.state.rawValue
        attempts = row.attempts
        nextAttemptAt = row.nextAttemptAt.map(RFC3339.string)
        lastError = row.lastError
    }

    enum CodingKeys: String, CodingKey {
        case state, attempts
        case accountID = "account_id"
        case deletedAt = "deleted_at"
        case nextAttemptAt = "next_attempt_at"
        case lastError = "last_error"
    }
}

struct FailedWebhookDTO: Encodable {
    var id: String
    var eventID: String
    var type: String
    var accountID: String?
    var url: String
    var attempts: Int
    var lastStatus: Int?
    var failedAt: String?

    init(_ row: FailedWebhook) {
        id = row.id
        eventID = row.eventID
        type = row.type
        accountID = row.accountID
        url = URLRedaction.redactingCredentials(row.url)
        attempts = row.attempts
        lastStatus = row.lastStatus
        failedAt = row.failedAt.map(RFC3339.string)
    }

    enum CodingKeys: String, CodingKey {
        case id, type, url, attempts
        case eventID = "event_id"
        case accountID = "account_id"
        case lastStatus = "last_status"
        case failedAt = "failed_at"
    }
}

struct NotificationDTO: Encodable {
    var id: String
    var receivedAt: String
    var teamID: String?
    var clientID: String?
    var type: String
    var outcome: String
    var accountID: String?
    var duplicates: Int

    init(_ row: ReceivedNotification, teamID: String?) {
        id = row.id
        receivedAt = RFC3339.string(row.receivedAt)
        self.teamID = teamID
        clientID = row.clientID
        type = row.type
        outcome = row.outcome.rawValue
        accountID = row.accountID
        duplicates = row.duplicates
    }

    enum CodingKeys: String, CodingKey {
        case id, type, outcome, duplicates
        case receivedAt = "received_at"
        case teamID = "team_id"
        case clientID = "client_id"
        case accountID = "account_id"
    }
}

struct DeliveryDTO: Encodable {
    var teamID: String?
    var clientID: String
    var lastReceivedAt: String?
    var received24h: Int
    var received7d: Int
    var duplicates7d: Int
    var unknownSubject7d: Int
    var revokedWithoutNotification7d: Int

    init(_ counts: DeliveryCounts, teamID: String?) {
        self.teamID = teamID
        clientID = counts.clientID
        lastReceivedAt = counts.lastReceivedAt.map(RFC3339.string)
        received24h = counts.received24h
        received7d = counts.received7d
        duplicates7d = counts.duplicates7d
        unknownSubject7d = counts.unknownSubject7d
        revokedWithoutNotification7d = counts.revokedWithoutNotification7d
    }

    enum CodingKeys: String, CodingKey {
        case teamID = "team_id"
        case clientID = "client_id"
        case lastReceivedAt = "last_received_at"
        case received24h = "received_24h"
        case received7d = "received_7d"
        case duplicates7d = "duplicates_7d"
        case unknownSubject7d = "unknown_subject_7d"
        case revokedWithoutNotification7d = "revoked_without_notification_7d"
    }
}

struct AuditEntryDTO: Encodable {
    var id: String
    var at: String
    var `operator`: String
    var method: String
    var route: String
    var accountID: String?
    var status: Int

    init(_ entry: AuditEntry) {
        id = entry.id
        at = RFC3339.string(entry.at)
        self.operator = entry.operatorName
        method = entry.method
        route = entry.route
        accountID = entry.accountID
        status = entry.status
    }

    enum CodingKeys: String, CodingKey {
        case id, at, `operator`, method, route, status
        case accountID = "account_id"
    }
}
