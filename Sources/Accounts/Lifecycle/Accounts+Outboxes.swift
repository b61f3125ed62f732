extension Accounts {
    /// Revocations Apple has not accepted yet (operators).
    public func pendingRevocations(limit: Int = 100) async throws(AccountsError) -> [RevocationJob] {
        do {
            return try await store.pendingRevocations(limit: limit)
        } catch {
            throw AccountsError.storage(error)
        }
    }

    /// Webhook deliveries in a state (operators).
    public func webhookDeliveries(status: String, limit: Int = 100) async throws(AccountsError) -> [WebhookDeliveryStatus] {
        do {
            return try await store.webhooks(status: status, limit: limit)
        } catch {
            throw AccountsError.storage(error)
        }
    }
}
