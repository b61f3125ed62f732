public import AppleID
import Foundation
public import Logging
public import Metrics

/// Apple's server-to-server notification endpoint's half of the lifecycle: verifies a notification and stores it in the
/// inbox; the ``NotificationHandler`` acts on it in the background. Kept to the minimum the contract asks of the
/// endpoint: a signature check, a digest and one insert.
public struct NotificationReceiver: Sendable {
    let inbox: any NotificationInbox
    let apple: any AppleGateway
    let vault: TokenVault
    let audit: AuditDigests
    let clock: any WallClock
    let metrics: any MetricsFactory
    let wakeups: JobWakeups

    /// Creates the receiver over its parts.
    public init(
        inbox: any NotificationInbox,
        apple: any AppleGateway,
        vault: TokenVault,
        audit: AuditDigests,
        clock: any WallClock,
        metrics: any MetricsFactory,
        wakeups: JobWakeups
    ) {
        self.inbox = inbox
        self.apple = apple
        self.vault = vault
        self.audit = audit
        self.clock = clock
        self.metrics = metrics
        self.wakeups = wakeups
    }

    /// Verifies a server-to-server notification and stores it durably in the inbox (keyed by `jti`); processing
    /// follows in the background. Returns `false` for a duplicate, which is not acted on again.
    ///
    /// - Throws: `notification_invalid` when the JWS fails any check; nothing is stored then.
    public func receive(payload: String, logger: Logger) async throws(AccountsError) -> Bool {
        let notification: AppleNotification
        do {
            notification = try await apple.verifyNotification(payload)
        } catch {
            let mapped = AccountsError.fromApple(error)
            if mapped.code == .appleUnavailable {
                // Apple's keys could not be fetched: Apple may retry, so do not call the notification invalid.
                throw mapped
            }
            Counter(label: "orchard_notifications_total", dimensions: [("outcome", "invalid")], factory: metrics).increment()
            throw AccountsError(.notificationInvalid, "the notification failed verification (\(mapped.code.rawValue))")
        }
        let event = notification.events
        let now = clock.now()
        let inserted = try await storing {
            // The event in Apple's shape, as the processing decodes it.
            let json = String(decoding: try WebhookEvent.encoder.encode(event), as: UTF8.self)
            let entry = InboxEntry(
                jti: notification.jti,
                receivedAt: now,
                eventType: event.type.rawValue,
                subjectDigest: try await audit.digest(event.sub),
                sealedEvent: try vault.seal(json, context: SealingContext.notification(notification.jti)),
                attempts: 0
            )
            return try await inbox.insertNotification(entry, nextAttemptAt: now)
        }
        Counter(label: "orchard_notifications_total", dimensions: [("outcome", inserted ? "stored" : "duplicate")], factory: metrics).increment()
        logger.debug(
            inserted ? "notification stored" : "duplicate notification ignored",
            metadata: ["notification.jti": "\(notification.jti)", "notification.type": "\(event.type.rawValue)"]
        )
        if inserted { wakeups.notify(.notifications) }
        return inserted
    }
}
