import Accounts
import Foundation
import HTTPTypes
import Hummingbird

/// `POST /v1/apple/notifications`: Apple's server-to-server notifications. Answers 200 only once the event is stored.
struct NotificationController<Context: RequestContext>: Sendable {
    let notifications: NotificationReceiver

    struct Body: Decodable {
        var payload: String
    }

    /// Adds the routes.
    func addRoutes(to routes: OrchardRoutes<Context>) {
        routes.add(.post, "/v1/apple/notifications", use: receive)
    }

    @Sendable func receive(_ request: Request, context: Context) async throws -> Response {
        let body: Body
        do {
            body = try await request.decodeJSON(as: Body.self, context: context)
        } catch let problem as OrchardProblem where problem.code == .invalidRequest {
            throw AccountsError(.notificationInvalid, "the body must be {\"payload\": JWS}")
        }
        let stored = try await notifications.receive(payload: body.payload, logger: context.logger)
        return OperationsController<Context>.json(.ok, stored ? #"{"status":"accepted"}"# : #"{"status":"duplicate"}"#)
    }
}
