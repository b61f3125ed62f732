public import Accounts
public import Foundation
import SQLKit

extension SQLAccountStore: WebhookOutbox {
    /// The columns a ``WebhookDelivery`` is read from.
    static let deliveryColumns = "id, event_id, event_type, url, body, attempts, created_at"

    /// Claims due, pending deliveries.
    public func claimWebhooks(now: Date, leaseUntil: Date, limit: Int) async throws -> [WebhookDelivery] {
        try await claim(.webhooks, now: now, leaseUntil: leaseUntil, limit: limit, returning: Self.deliveryColumns, as: Self.delivery(from:))
    }

    /// Records a batch, each delivery with one more attempt: delivered ones at once, then each retry and give-up with
    /// its own error.
    public func completeWebhooks(_ results: [JobResult<WebhookDelivery, Void>], at now: Date) async throws {
        let delivered = results.filter(\.outcome.isDone).map(\.job.id)
        try await database.transaction { db in
            if !delivered.isEmpty {
                try await db.raw(
                    """
                    UPDATE webhook_outbox SET status = 'delivered', delivered_at = \(bind: now.milliseconds), attempts = attempts + 1,
                        next_attempt_at = NULL, lease_until = NULL
                    WHERE id IN (\(binds: delivered))
                    """
                ).run()
            }
            for result in results {
                let attempts = result.job.attempts + 1
                switch result.outcome {
                case .done(_):
                    continue
                case .retry(let next, let error):
                    try await db.raw(
                        """
                        UPDATE webhook_outbox SET attempts = \(bind: attempts), next_attempt_at = \(bind: next.milliseconds),
                            lease_until = NULL, last_error = \(bind: error)
                        WHERE id = \(bind: result.job.id)
                        """
                    ).run()
                case .failed(let error):
                    try await db.raw(
                        """
                        UPDATE webhook_outbox SET status = 'failed', attempts = \(bind: attempts), next_attempt_at = NULL, lease_until = NULL,
                            last_error = \(bind: error), failed_at = \(bind: now.milliseconds)
                        WHERE id = \(bind: result.job.id)
                        """
                    ).run()
                }
            }
        }
    }

    /// Given-up deliveries, through the `(status, next_attempt_at)` index.
    public func failedWebhookCount() async throws -> Int {
        try await database.read("SELECT COUNT(*) AS n FROM webhook_outbox WHERE status = 'failed'").first?.decode(column: "n", as: Int.self) ?? 0
    }

    /// Deliveries in a state.
    public func webhooks(status: String, limit: Int) async throws -> [WebhookDeliveryStatus] {
        try await database.read(
            """
            SELECT \(unsafeRaw: Self.deliveryColumns), status, last_error, next_attempt_at
            FROM webhook_outbox WHERE status = \(bind: status) ORDER BY created_at LIMIT \(bind: limit)
            """
        ).map { row in
            WebhookDeliveryStatus(
                delivery: try Self.delivery(from: row),
                status: try row.string("status"),
                lastError: try row.optionalString("last_error"),
                nextAttemptAt: try row.date("next_attempt_at")
            )
        }
    }

    /// A delivery from its row.
    static func delivery(from row: any SQLRow) throws -> WebhookDelivery {
        WebhookDelivery(
            id: try row.string("id"),
            eventID: try row.string("event_id"),
            eventType: try row.string("event_type"),
            url: try row.string("url"),
            body: try row.string("body"),
            attempts: try row.decode(column: "attempts", as: Int.self),
            createdAt: try row.date("created_at") ?? Date(timeIntervalSince1970: 0)
        )
    }
}
