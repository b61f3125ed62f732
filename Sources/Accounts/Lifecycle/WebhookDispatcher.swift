public import AppleID
import Foundation
public import Logging
public import Metrics

/// Sends one webhook attempt; implemented over HTTP by the server.
public protocol WebhookTransport: Sendable {
    /// POSTs `body` to `url` with `headers`; returns the HTTP status, or throws when the receiver cannot be reached.
    func post(url: String, body: String, headers: [(String, String)]) async throws -> Int
}

/// Delivers the webhook outbox: each attempt signed afresh (receivers refuse old timestamps), retried with backoff
/// for three days, then marked failed for operators; a 2xx answer ends the retries.
public struct WebhookDispatcher: Sendable {
    let store: any LifecycleStore
    let signer: WebhookSigner
    let transport: any WebhookTransport
    let clock: any WallClock
    let random: any RandomSource
    let configuration: AccountsConfiguration
    let metrics: any MetricsFactory

    /// Creates the dispatcher; `metrics` (for `orchard_webhooks_total`) defaults to the process's factory.
    public init(
        store: any LifecycleStore,
        signer: WebhookSigner,
        transport: any WebhookTransport,
        clock: any WallClock,
        random: any RandomSource = SystemRandomSource(),
        configuration: AccountsConfiguration,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) {
        self.metrics = metrics
        self.store = store
        self.signer = signer
        self.transport = transport
        self.clock = clock
        self.random = random
        self.configuration = configuration
    }

    /// One pass: claims due deliveries and sends them. Returns how many it claimed.
    public func processDue(limit: Int = 32, logger: Logger) async -> Int {
        let now = clock.now()
        let claimed: [WebhookDelivery]
        do {
            claimed = try await store.claimWebhooks(now: now, leaseUntil: now.addingTimeInterval(configuration.leaseDuration.seconds), limit: limit)
        } catch {
            logger.warning("cannot claim webhooks", metadata: ["error": "\(error)"])
            return 0
        }
        await withTaskGroup(of: Void.self) { group in
            for delivery in claimed {
                group.addTask { await self.send(delivery, logger: logger) }
            }
        }
        return claimed.count
    }

    private func send(_ delivery: WebhookDelivery, logger: Logger) async {
        let timestamp = Int(clock.now().timeIntervalSince1970)
        let headers = [
            ("content-type", "application/json"),
            ("webhook-id", delivery.eventID),
            ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", signer.signature(id: delivery.eventID, timestamp: timestamp, body: delivery.body)),
        ]
        let failure: String
        do {
            let status = try await transport.post(url: delivery.url, body: delivery.body, headers: headers)
            if (200..<300).contains(status) {
                Counter(label: "orchard_webhooks_total", dimensions: [("outcome", "delivered")], factory: metrics).increment()
                try? await store.markWebhookDelivered(id: delivery.id, at: clock.now())
                return
            }
            failure = "HTTP \(status)"
        } catch {
            failure = "unreachable: \(type(of: error))"
        }
        let attempts = delivery.attempts + 1
        let now = clock.now()
        if now.timeIntervalSince(delivery.createdAt) >= configuration.webhookRetryWindow.seconds {
            Counter(label: "orchard_webhooks_total", dimensions: [("outcome", "failed")], factory: metrics).increment()
            logger.error(
                "webhook given up after its retry window",
                metadata: ["webhook.id": "\(delivery.eventID)", "webhook.url": "\(delivery.url)"]
            )
            try? await store.markWebhookFailed(id: delivery.id, attempts: attempts, lastError: failure)
            return
        }
        Counter(label: "orchard_webhooks_total", dimensions: [("outcome", "retry")], factory: metrics).increment()
        let delay = configuration.retryPolicy.delay(afterAttempts: attempts, unit: random.unit())
        logger.warning("webhook not delivered; will retry", metadata: ["webhook.id": "\(delivery.eventID)", "error": "\(failure)"])
        try? await store.rescheduleWebhook(id: delivery.id, attempts: attempts, nextAttemptAt: now.addingTimeInterval(delay), lastError: failure)
    }
}
