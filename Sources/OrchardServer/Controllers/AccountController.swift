import Accounts
import Foundation
import HTTPTypes
import Hummingbird

/// `DELETE /v1/account`: the user deletes their account.
struct AccountController<Context: RequestContext>: Sendable {
    let accounts: AccountDesk

    struct DeletionResponse: ResponseEncodable {
        var deleted: Bool
        var appleRevocation: String
        var manualRevocationURL: String?

        enum CodingKeys: String, CodingKey {
            case deleted
            case appleRevocation = "apple_revocation"
            case manualRevocationURL = "manual_revocation_url"
        }
    }

    /// Adds the routes.
    func addRoutes(to routes: OrchardRoutes<Context>) {
        routes.add(.delete, "/v1/account", .endsSession, use: delete)
    }

    @Sendable func delete(_ request: Request, context: Context) async throws -> DeletionResponse {
        let result = try await accounts.deleteAccount(sessionToken: try SessionController<Context>.token(request), logger: context.logger)
        return DeletionResponse(
            deleted: true,
            appleRevocation: result.appleRevocation.rawValue,
            manualRevocationURL: result.manualRevocationURL?.absoluteString
        )
    }
}
