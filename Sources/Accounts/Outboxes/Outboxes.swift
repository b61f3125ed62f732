/// What operators read of the durable queues: revocations Apple has not accepted, webhook deliveries by state, and a
/// notification's inbox record.
public protocol OutboxQueries: Sendable {
    /// Revocations not yet accepted, oldest first.
    func pendingRevocations(limit: Int) async throws -> [RevocationJob]
    /// Deliveries in a state (`pending`, `delivered`, `failed`), oldest first.
    func webhooks(status: String, limit: Int) async throws -> [WebhookDeliveryStatus]
    /// The inbox record of a notification, if any.
    func notification(jti: String) async throws -> InboxEntry?
}

/// The durable queues as operators see them (`orchard accounts revocations`, `orchard accounts webhooks`).
public struct Outboxes: Sendable {
    let store: any OutboxQueries

    /// Creates the view over the store.
    public init(store: any OutboxQueries) {
        self.store = store
    }

    /// Revocations Apple has not accepted yet.
    public func pendingRevocations(limit: Int = 100) async throws(AccountsError) -> [RevocationJob] {
        try await storing { try await store.pendingRevocations(limit: limit) }
    }

    /// Webhook deliveries in a state.
    public func webhookDeliveries(status: String, limit: Int = 100) async throws(AccountsError) -> [WebhookDeliveryStatus] {
        try await storing { try await store.webhooks(status: status, limit: limit) }
    }
}
