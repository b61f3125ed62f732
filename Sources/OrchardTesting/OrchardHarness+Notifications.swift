public import Accounts
import Foundation
import NIOHTTP1
import OrchardServer
import SQLKit
import Storage

extension OrchardHarness {
    /// The webhook secret of ``withWebhooks(policy:jobs:_:)``, as the Standard Webhooks specification writes it.
    public static let webhookSecret = WebhookReceiver.secret(seed: "orchard-test-webhook-secret-0123")

    /// Runs `body` with Orchard telling a ``WebhookReceiver`` about lifecycle events, under the given consent-revoked
    /// policy.
    public static func withWebhooks(
        policy: ConsentRevokedPolicy = .signOut,
        jobs: JobDriving = .background,
        _ body: (OrchardHarness, WebhookReceiver) async throws -> Void
    ) async throws {
        let receiver = try await WebhookReceiver.start()
        let url = URL(string: receiver.url)!
        do {
            try await with(
                configure: {
                    $0.webhooks.urls = [url]
                    $0.webhooks.secret = webhookSecret
                    $0.lifecycle.consentRevokedPolicy = policy
                },
                jobs: jobs,
                { h in try await body(h, receiver) }
            )
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    /// Posts an Apple notification JWS to the notification endpoint.
    public func postNotification(_ payload: String) async throws -> TestResponse {
        try await request(.POST, "/v1/apple/notifications", json: ["payload": payload])
    }

    /// A notification's inbox row: its sealed event (until processed) and its outcome (once processed).
    public func inboxRow(_ jti: String) async throws -> (sealed: String?, outcome: String?)? {
        try await database.withDatabase { db in
            guard let row = try await db.raw("SELECT sealed_event, outcome FROM notification_inbox WHERE jti = \(bind: jti)").first() else {
                return nil
            }
            return (try row.decode(column: "sealed_event", as: String?.self), try row.decode(column: "outcome", as: String?.self))
        }
    }

    /// Whether the notification `jti` was processed, waiting for the background jobs (see ``eventually(timeout:_:)``).
    public func processed(_ jti: String) async -> Bool {
        await eventually { (try? await inboxRow(jti))??.outcome != nil }
    }
}
