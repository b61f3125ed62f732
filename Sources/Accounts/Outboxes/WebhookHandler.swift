public import AppleID
public import Foundation
public import Logging
public import Metrics

/// Sends one webhook attempt; implemented over HTTP by the server.
public protocol WebhookTransport: Sendable {
    /// POSTs `body` to `url` with `headers`; returns the HTTP status, or throws when the receiver cannot be reached.
    func post(url: String, body: String, headers: [(String, String)]) async throws -> Int
}

extension JobKind {
    /// Deliveries in the webhook outbox.
    public static let webhooks = JobKind("webhooks")
}

/// Delivers the webhook outbox: each attempt signed afresh (receivers refuse old timestamps), retried with backoff
/// for three days, then marked failed for operators; a 2xx answer ends the retries. The deliveries of a batch are sent
/// at once, so one slow receiver does not hold up the others.
public struct WebhookHandler: JobHandler {
    /// The outbox it claims from and records into.
    let store: any WebhookOutbox
    /// Signs each attempt.
    let signer: WebhookSigner
    /// Sends each attempt.
    let transport: any WebhookTransport
    /// The time of signatures, retries and the retry window.
    let clock: any WallClock
    /// When an undelivered webhook is tried again.
    let backoff: Backoff
    /// How long after its event a webhook is still tried.
    let retryWindow: Duration
    /// Where `orchard_webhooks_total` goes.
    let metrics: any MetricsFactory

    /// The kind.
    public var kind: JobKind { .webhooks }
    /// Claims per pass.
    public var batchSize: Int { 32 }
    /// Every delivery of a batch at once.
    public var concurrency: Int { batchSize }
    /// Up to 8 passes at once: a receiver that stalls until the deadline holds only its own attempts (and the record of
    /// its batch), while the deliveries of later events go out in passes of their own.
    public var passesInFlight: Int { 8 }
    /// The attempt's deadline plus 5 seconds.
    public var leaseDuration: Duration { attemptDeadline + .seconds(5) }
    /// The deadline of one attempt (the transport's).
    let attemptDeadline: Duration

    /// Creates the handler; `metrics` (for `orchard_webhooks_total`) defaults to the process's factory.
    public init(
        store: any WebhookOutbox,
        signer: WebhookSigner,
        transport: any WebhookTransport,
        clock: any WallClock,
        random: any RandomSource = SystemRandomSource(),
        configuration: AccountsConfiguration,
        attemptDeadline: Duration = .seconds(10),
        metrics: any MetricsFactory = MetricsSystem.factory
    ) {
        self.attemptDeadline = attemptDeadline
        self.metrics = metrics
        self.store = store
        self.signer = signer
        self.transport = transport
        self.clock = clock
        self.backoff = Backoff(configuration.retryPolicy, random: random)
        self.retryWindow = configuration.webhookRetryWindow
    }

    /// Claims due, pending deliveries.
    public func claim(now: Date, leaseUntil: Date, limit: Int, logger: Logger) async throws -> [WebhookDelivery] {
        let claimed = try await store.claimWebhooks(now: now, leaseUntil: leaseUntil, limit: limit)
        // Given-up deliveries waiting for an operator's retry (alerted on in deploy/monitoring).
        if let failed = try? await store.failedWebhookCount() {
            Gauge(label: "orchard_webhooks_failed", factory: metrics).record(failed)
        }
        return claimed
    }

    /// Sends one attempt, signed now.
    public func perform(_ delivery: WebhookDelivery, logger: Logger) async -> JobOutcome<Void> {
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
                return .done
            }
            failure = "HTTP \(status)"
        } catch {
            failure = "unreachable: \(type(of: error))"
        }
        let now = clock.now()
        if now.timeIntervalSince(delivery.createdAt) >= retryWindow.seconds {
            Counter(label: "orchard_webhooks_total", dimensions: [("outcome", "failed")], factory: metrics).increment()
            logger.error(
                "webhook given up after its retry window",
                metadata: ["webhook.id": "\(delivery.eventID)", "webhook.url": "\(URLRedaction.redactingCredentials(delivery.url))"]
            )
            return .failed(error: failure)
        }
        Counter(label: "orchard_webhooks_total", dimensions: [("outcome", "retry")], factory: metrics).increment()
        logger.warning("webhook not delivered; will retry", metadata: ["webhook.id": "\(delivery.eventID)", "error": "\(failure)"])
        return .retry(at: backoff.retryAt(afterAttempts: delivery.attempts + 1, from: now), error: failure)
    }

    /// Records the batch's deliveries, retries and give-ups, in one transaction.
    public func complete(_ results: [JobResult<WebhookDelivery, Void>], at now: Date) async throws {
        try await store.completeWebhooks(results, at: now)
    }

    /// The event's id and the delivery's row.
    public func metadata(for delivery: WebhookDelivery) -> Logger.Metadata {
        ["webhook.id": "\(delivery.eventID)", "webhook.delivery": "\(delivery.id)"]
    }
}
