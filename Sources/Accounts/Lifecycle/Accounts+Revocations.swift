import AppleID
import Foundation
public import Logging
import Metrics

extension Accounts {
    /// Asks Apple to revoke a claimed outbox token; on acceptance the row is removed, otherwise it is released for a
    /// retry with backoff. Returns whether Apple accepted.
    func attemptRevocation(_ job: RevocationJob, token: Redacted<String>, deadline: Duration, logger: Logger) async -> Bool {
        do {
            try await apple.revoke(token, hint: job.hint, clientID: job.clientID, deadline: deadline)
        } catch {
            let mapped = Self.mapApple(error)
            let attempts = job.attempts + 1
            let delay = configuration.retryPolicy.delay(afterAttempts: attempts, unit: random.unit())
            if mapped.code == .appleClientRejected {
                Counter(label: "orchard_apple_client_rejected_total", dimensions: [("endpoint", "revoke")], factory: metrics).increment()
                logger.critical(
                    "Apple refused Orchard's client secret at /auth/revoke: the revocation is kept and retried; fix APPLE_TEAM_ID, APPLE_KEY_ID or APPLE_PRIVATE_KEY_FILE",
                    metadata: ["revocation.id": "\(job.id)", "apple.client_id": "\(job.clientID)"]
                )
            } else {
                logger.warning(
                    "revocation not accepted yet; will retry",
                    metadata: ["revocation.id": "\(job.id)", "revocation.attempts": "\(attempts)", "error.code": "\(mapped.code.rawValue)"]
                )
            }
            Counter(label: "orchard_revocations_total", dimensions: [("outcome", "retry")], factory: metrics).increment()
            do {
                try await store.rescheduleRevocation(
                    id: job.id,
                    attempts: attempts,
                    nextAttemptAt: clock.now().addingTimeInterval(delay),
                    lastError: mapped.code.rawValue
                )
            } catch {
                logger.error("cannot reschedule a revocation; its lease will expire and it will be retried", metadata: ["revocation.id": "\(job.id)"])
            }
            wakeups.notify(.revocations)
            return false
        }
        Counter(label: "orchard_revocations_total", dimensions: [("outcome", "revoked")], factory: metrics).increment()
        do {
            try await store.completeRevocation(id: job.id)
        } catch {
            logger.error("Apple accepted a revocation but the row could not be removed", metadata: ["revocation.id": "\(job.id)"])
        }
        return true
    }

    /// One pass of the revocation worker: claims due rows and revokes them. Returns how many it claimed.
    public func processDueRevocations(limit: Int = 32, logger: Logger) async -> Int {
        let now = clock.now()
        let claimed: [RevocationJob]
        do {
            claimed = try await store.claimRevocations(
                now: now,
                leaseUntil: now.addingTimeInterval(configuration.leaseDuration.seconds),
                limit: limit
            )
        } catch {
            logger.warning("cannot claim revocations", metadata: ["error": "\(error)"])
            return 0
        }
        await withTaskGroup(of: Void.self) { group in
            for job in claimed {
                group.addTask {
                    do {
                        let token = try self.vault.open(job.sealedToken, context: Self.revocationContext(job.id))
                        _ = await self.attemptRevocation(job, token: token, deadline: .seconds(10), logger: logger)
                    } catch {
                        logger.error("a queued token cannot be opened with the configured vault keys", metadata: ["revocation.id": "\(job.id)"])
                    }
                }
            }
        }
        return claimed.count
    }

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
