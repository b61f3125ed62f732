import AppleID
import Foundation
public import Logging
import Metrics

extension Accounts {
    /// Verifies a server-to-server notification and stores it durably in the inbox (keyed by `jti`); processing
    /// follows in the background. Returns `false` for a duplicate, which is not acted on again.
    ///
    /// - Throws: `notification_invalid` when the JWS fails any check; nothing is stored then.
    public func receiveNotification(payload: String, logger: Logger) async throws(AccountsError) -> Bool {
        let notification: AppleNotification
        do {
            notification = try await apple.verifyNotification(payload)
        } catch {
            let mapped = Self.mapApple(error)
            if mapped.code == .appleUnavailable {
                // Apple's keys could not be fetched: Apple may retry, so do not call the notification invalid.
                throw mapped
            }
            Counter(label: "orchard_notifications_total", dimensions: [("outcome", "invalid")], factory: metrics).increment()
            throw AccountsError(.notificationInvalid, "the notification failed verification (\(mapped.code.rawValue))")
        }
        let event = notification.events
        let now = clock.now()
        let inserted: Bool
        do {
            // The event in Apple's shape, as the processing decodes it. JSONEncoder, not JSONSerialization on a
            // dictionary: that bridged to NSDictionary and showed at several percent of ingest in a `perf` profile.
            let json = String(decoding: try WebhookEvent.encoder.encode(event), as: UTF8.self)
            let entry = InboxEntry(
                jti: notification.jti,
                receivedAt: now,
                eventType: event.type.rawValue,
                subjectDigest: try await auditDigest(event.sub),
                sealedEvent: try vault.seal(json, context: Self.notificationContext(notification.jti)),
                attempts: 0
            )
            inserted = try await store.insertNotification(entry, nextAttemptAt: now)
        } catch {
            throw AccountsError.storage(error)
        }
        Counter(label: "orchard_notifications_total", dimensions: [("outcome", inserted ? "stored" : "duplicate")], factory: metrics).increment()
        logger.debug(
            inserted ? "notification stored" : "duplicate notification ignored",
            metadata: ["notification.jti": "\(notification.jti)", "notification.type": "\(event.type.rawValue)"]
        )
        if inserted { wakeups.notify(.notifications) }
        return inserted
    }

    /// Ends every session of an account and marks its Apple credential revoked, with the webhook, if the account still
    /// meets `condition` when the change commits.
    func revokeCredential(
        _ account: AccountRecord,
        reason: String,
        completesNotification: String?,
        condition: ChangeCondition?,
        at now: Date
    ) async throws -> AccountChangeOutcome {
        let webhook = WebhookEvent(
            type: "account.credential_revoked",
            id: randomID("evt_"),
            occurredAt: now,
            accountID: account.id,
            reason: reason
        )
        return try await store.apply(
            AccountChange(
                accountID: account.id,
                action: .revokeCredential,
                webhooks: webhooks(for: webhook),
                completesNotification: completesNotification,
                condition: condition,
                at: now
            )
        )
    }

    /// Deletes an account for a notification without revoking at Apple (Apple ended the grant), if the account still
    /// meets `condition` when the deletion commits.
    func deleteWithoutRevoking(
        _ account: AccountRecord,
        reason: DeletionReason,
        jti: String,
        condition: ChangeCondition,
        logger: Logger
    ) async throws(AccountsError) -> AccountChangeOutcome {
        let outcome = try await delete(
            accountID: account.id,
            sealedSubject: account.sealedSubject,
            reason: reason,
            revoke: false,
            completesNotification: jti,
            condition: condition,
            logger: logger
        )
        switch outcome {
        case .deleted: return .applied(revocation: nil)
        case .gone: return .gone
        case .superseded: return .superseded
        }
    }

    /// The sealing context of a stored notification event.
    static func notificationContext(_ jti: String) -> String { "notification:\(jti):event" }
}
