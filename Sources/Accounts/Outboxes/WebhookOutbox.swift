public import Foundation

/// The webhook outbox, as ``WebhookHandler`` uses it.
public protocol WebhookOutbox: Sendable {
    /// Claims up to `limit` pending deliveries due at `now` that nobody holds, leasing them until `leaseUntil`.
    func claimWebhooks(now: Date, leaseUntil: Date, limit: Int) async throws -> [WebhookDelivery]
    /// Records a batch in one transaction, each with one more attempt: `done` is delivered, `retry` is released with its
    /// next due time and error, `failed` is given up (kept for operators).
    func completeWebhooks(_ results: [JobResult<WebhookDelivery, Void>], at now: Date) async throws
    /// How many deliveries were given up and wait for an operator's retry.
    func failedWebhookCount() async throws -> Int
}
