import AppleID
import Foundation
public import Logging
import Metrics
import Synchronization

/// Apple's server-to-server notification endpoint's half of the lifecycle: verifies a notification and stores it in the
/// inbox; the ``NotificationHandler`` acts on it in the background. Kept to the minimum the contract asks of the
/// endpoint: a signature check, a digest and one insert, held back while processing is behind (``InboxBackpressure``).
public struct NotificationReceiver: Sendable {
    let inbox: any NotificationInbox
    let apple: any AppleGateway
    let vault: TokenVault
    let audit: AuditDigests
    let clock: any WallClock
    let metrics: any MetricsFactory
    let wakeups: JobWakeups
    /// Holds a notification back while processing is behind.
    let backpressure: InboxBackpressure
    /// The last arrival time stamped for each subject recently, in milliseconds: a subject's notifications stored by
    /// this process arrive at least a millisecond apart, so that the handler acts on them in the order they came (the
    /// inbox keeps milliseconds; two in one millisecond would otherwise tie).
    private let lastArrivals = ArrivalStamps()

    /// `now` in whole milliseconds, later than the subject's earlier arrival in this process.
    private func arrivalTime(of subjectDigest: String, now: Date) -> Date {
        let milliseconds = Int64((now.timeIntervalSince1970 * 1000).rounded())
        let stamped = lastArrivals.stamps.withLock { last in
            if last.count > 10_000 { last = last.filter { $0.value > milliseconds - 1_000 } }
            let stamped = max(milliseconds, (last[subjectDigest] ?? 0) + 1)
            last[subjectDigest] = stamped
            return stamped
        }
        return Date(timeIntervalSince1970: Double(stamped) / 1000)
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
        await backpressure.admit()
        let event = notification.events
        let now = clock.now()
        let inserted = try await storing {
            // The event in Apple's shape, as the processing decodes it.
            let json = String(decoding: try WebhookEvent.encoder.encode(event), as: UTF8.self)
            let subjectDigest = try await audit.digest(event.sub)
            let entry = InboxEntry(
                jti: notification.jti,
                receivedAt: arrivalTime(of: subjectDigest, now: now),
                eventType: event.type.rawValue,
                subjectDigest: subjectDigest,
                sealedEvent: try vault.seal(json, context: SealingContext.notification(notification.jti)),
                attempts: 0,
                clientID: notification.aud
            )
            return try await inbox.insertNotification(entry, nextAttemptAt: now)
        }
        Counter(label: "orchard_notifications_total", dimensions: [("outcome", inserted ? "stored" : "duplicate")], factory: metrics).increment()
        // Proof that Apple reaches this server, per client id.
        Gauge(label: "orchard_notifications_last_received_timestamp_seconds", dimensions: [("client_id", notification.aud)], factory: metrics)
            .record(now.timeIntervalSince1970)
        if !inserted {
            Counter(label: "orchard_notifications_duplicates_total", dimensions: [("client_id", notification.aud)], factory: metrics).increment()
        }
        logger.debug(
            inserted ? "notification stored" : "duplicate notification ignored",
            metadata: ["notification.jti": "\(notification.jti)", "notification.type": "\(event.type.rawValue)"]
        )
        if inserted {
            backpressure.stored()
            wakeups.notify(.notifications)
        }
        return inserted
    }
}

/// The last arrival times a ``NotificationReceiver`` stamped, by subject.
private final class ArrivalStamps: Sendable {
    let stamps = Mutex<[String: Int64]>([:])
}
