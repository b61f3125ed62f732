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
            var object: [String: Any] = ["type": event.type.rawValue, "sub": event.sub.value, "event_time": event.eventTimeMilliseconds]
            if let email = event.email { object["email"] = email.value }
            if let isPrivate = event.isPrivateEmail { object["is_private_email"] = isPrivate }
            let json = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
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
        logger.info(
            inserted ? "notification stored" : "duplicate notification ignored",
            metadata: ["notification.jti": "\(notification.jti)", "notification.type": "\(event.type.rawValue)"]
        )
        if inserted { wakeups.notify(.notifications) }
        return inserted
    }

    /// One pass of the notification worker: claims stored notifications and acts on each once. Returns how many it
    /// claimed.
    public func processDueNotifications(limit: Int = 32, logger: Logger) async -> Int {
        let now = clock.now()
        let claimed: [InboxEntry]
        do {
            claimed = try await store.claimNotifications(
                now: now,
                leaseUntil: now.addingTimeInterval(configuration.leaseDuration.seconds),
                limit: limit
            )
        } catch {
            logger.warning("cannot claim notifications", metadata: ["error": "\(error)"])
            return 0
        }
        for entry in claimed {
            do {
                try await process(entry, logger: logger)
            } catch {
                let attempts = entry.attempts + 1
                let delay = configuration.retryPolicy.delay(afterAttempts: attempts, unit: random.unit())
                logger.warning(
                    "notification processing failed; will retry",
                    metadata: ["notification.jti": "\(entry.jti)", "error": "\(error)"]
                )
                try? await store.rescheduleNotification(jti: entry.jti, attempts: attempts, nextAttemptAt: clock.now().addingTimeInterval(delay))
            }
        }
        return claimed.count
    }

    private func process(_ entry: InboxEntry, logger: Logger) async throws {
        let now = clock.now()
        guard let sealed = entry.sealedEvent else {
            try await store.completeNotification(jti: entry.jti, outcome: "no_event", at: now)
            return
        }
        let json = try vault.open(sealed, context: Self.notificationContext(entry.jti))
        let event = try JSONDecoder().decode(AppleNotificationEvent.self, from: Data(json.value.utf8))
        guard let account = try await store.account(subjectHashes: vault.subjectHashCandidates(event.sub)) else {
            try await store.completeNotification(jti: entry.jti, outcome: "unknown_subject", at: now)
            logger.info("notification for an unknown subject recorded", metadata: ["notification.jti": "\(entry.jti)"])
            return
        }
        var applied = true
        switch event.type {
        case .emailEnabled, .emailDisabled:
            let forwarding: EmailForwarding = event.type == .emailEnabled ? .enabled : .disabled
            let webhook = WebhookEvent(
                type: "account.email_forwarding_changed",
                id: randomID("evt_"),
                occurredAt: now,
                accountID: account.id,
                emailForwarding: forwarding
            )
            applied = try await store.apply(
                AccountChange(
                    accountID: account.id,
                    action: .setEmailForwarding(forwarding),
                    webhooks: webhooks(for: webhook),
                    completesNotification: entry.jti,
                    at: now
                )
            )
        case .consentRevoked where configuration.consentRevokedPolicy == .signOut:
            applied = try await revokeCredential(account, reason: "consent_revoked", completesNotification: entry.jti, at: now)
        case .consentRevoked:
            applied = try await deleteQuietly(account, reason: .consentRevoked, jti: entry.jti, logger: logger)
        case .accountDelete:
            applied = try await deleteQuietly(account, reason: .appleAccountDeleted, jti: entry.jti, logger: logger)
        case .unknown(let type):
            logger.warning("notification of an unknown type recorded and ignored", metadata: ["notification.type": "\(type)"])
            try await store.completeNotification(jti: entry.jti, outcome: "unknown_type", at: now)
            return
        }
        if !applied {
            try await store.completeNotification(jti: entry.jti, outcome: "unknown_subject", at: now)
        }
        wakeups.notify(.webhooks)
        Counter(label: "orchard_notifications_processed_total", dimensions: [("type", event.type.rawValue)], factory: metrics).increment()
    }

    /// Ends every session of an account and marks its Apple credential revoked, with the webhook; `false` when the
    /// account is gone.
    func revokeCredential(_ account: AccountRecord, reason: String, completesNotification: String?, at now: Date) async throws -> Bool {
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
                at: now
            )
        )
    }

    private func deleteQuietly(_ account: AccountRecord, reason: DeletionReason, jti: String, logger: Logger) async throws -> Bool {
        do {
            _ = try await delete(account, reason: reason, revoke: false, completesNotification: jti, logger: logger)
            return true
        } catch  where error.code == .sessionInvalid {
            return false
        }
    }

    /// The sealing context of a stored notification event.
    static func notificationContext(_ jti: String) -> String { "notification:\(jti):event" }
}
