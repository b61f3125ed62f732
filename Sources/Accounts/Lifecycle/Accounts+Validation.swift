import AppleID
import Foundation
public import Logging
import Metrics

extension Accounts {
    /// When an account is next due after a validation at `now`: one interval later plus up to 10 % (at most an hour)
    /// of jitter, never earlier, so accounts created together spread out and none is validated twice in an interval.
    func nextValidation(after now: Date) -> Date {
        let interval = configuration.refreshValidationInterval.seconds
        return now.addingTimeInterval(interval + min(interval * 0.1, 3600) * random.unit())
    }

    /// One pass of the refresh-token validator: validates each account due (with a live session) at Apple once.
    ///
    /// `invalid_grant` ends every session of the account (`apple_credential_revoked`), marks its credential revoked and
    /// sends `account.credential_revoked`; transient failures and `invalid_client` keep the sessions and retry with
    /// backoff. Returns how many accounts it claimed.
    public func processDueValidations(limit: Int = 64, logger: Logger) async -> Int {
        let now = clock.now()
        let claimed: [AccountRecord]
        do {
            claimed = try await store.claimDueValidations(
                now: now,
                leaseUntil: now.addingTimeInterval(configuration.leaseDuration.seconds),
                limit: limit
            )
            let backlog = try await store.validationBacklog(now: now)
            Gauge(label: "orchard_refresh_validations_due", factory: metrics).record(backlog.count)
            Gauge(label: "orchard_refresh_validation_oldest_overdue_seconds", factory: metrics).record(
                backlog.oldestDue.map { now.timeIntervalSince($0) } ?? 0
            )
        } catch {
            logger.warning("cannot claim due validations", metadata: ["error": "\(error)"])
            return 0
        }
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for account in claimed {
                if running >= 16 {
                    await group.next()
                    running -= 1
                }
                group.addTask { await self.validate(account, logger: logger) }
                running += 1
            }
        }
        return claimed.count
    }

    private func validate(_ account: AccountRecord, logger: Logger) async {
        let now = clock.now()
        do {
            guard try await store.hasLiveSession(accountID: account.id, now: now) else {
                // Nobody is signed in: nothing to keep alive. The next sign-in validates by its code exchange.
                try await store.scheduleValidation(accountID: account.id, at: nil)
                Counter(label: "orchard_refresh_validations_total", dimensions: [("outcome", "dormant")], factory: metrics).increment()
                return
            }
            guard let sealed = account.sealedRefreshToken else {
                try await store.scheduleValidation(accountID: account.id, at: nil)
                return
            }
            let refreshToken = try vault.open(sealed, context: Self.context(account.id, "refresh_token"))
            do {
                let response = try await apple.validateRefreshToken(refreshToken, clientID: account.clientID)
                let sealedAccess = try response.accessToken.map { try vault.seal($0, context: Self.context(account.id, "access_token")) }
                try await store.recordValidation(
                    accountID: account.id,
                    at: clock.now(),
                    sealedAccessToken: sealedAccess,
                    nextValidationAt: nextValidation(after: clock.now())
                )
                Counter(label: "orchard_refresh_validations_total", dimensions: [("outcome", "valid")], factory: metrics).increment()
            } catch {
                try await handleValidationFailure(account, error: Self.mapApple(error), logger: logger)
            }
        } catch {
            logger.error(
                "refresh validation could not be recorded; it will be retried",
                metadata: ["account.id": "\(account.id)", "error": "\(error)"]
            )
        }
    }

    private func handleValidationFailure(_ account: AccountRecord, error: AccountsError, logger: Logger) async throws {
        let now = clock.now()
        switch error.code {
        case .authorizationCodeRejected:
            // invalid_grant: the user revoked the app, changed their password, or Apple ended the grant.
            Counter(label: "orchard_refresh_validations_total", dimensions: [("outcome", "invalid_grant")], factory: metrics).increment()
            logger.info("Apple says the grant is gone: signing the account out everywhere", metadata: ["account.id": "\(account.id)"])
            _ = try await revokeCredential(account, reason: "invalid_grant", completesNotification: nil, at: now)
            try await store.scheduleValidation(accountID: account.id, at: nil)
            wakeups.notify(.webhooks)
        case .appleClientRejected:
            Counter(label: "orchard_refresh_validations_total", dimensions: [("outcome", "client_rejected")], factory: metrics).increment()
            Counter(label: "orchard_apple_client_rejected_total", dimensions: [("endpoint", "token")], factory: metrics).increment()
            logger.critical(
                "Apple refused Orchard's client secret during refresh validation: nobody is signed out; fix APPLE_TEAM_ID, APPLE_KEY_ID or APPLE_PRIVATE_KEY_FILE",
                metadata: ["account.id": "\(account.id)", "apple.client_id": "\(account.clientID)"]
            )
            try await store.scheduleValidation(accountID: account.id, at: now.addingTimeInterval(configuration.retryPolicy.maximumDelay))
        default:
            Counter(label: "orchard_refresh_validations_total", dimensions: [("outcome", "unavailable")], factory: metrics).increment()
            // The outage's length so far stands for the number of tries: retries start after 2 s and double.
            let due = (account.lastValidatedAt ?? now).addingTimeInterval(configuration.refreshValidationInterval.seconds)
            let overdue = max(1, now.timeIntervalSince(due) / configuration.retryPolicy.initialDelay)
            let delay = configuration.retryPolicy.delay(afterAttempts: 1 + Int(log2(overdue)), unit: random.unit())
            logger.warning("Apple unavailable for refresh validation; sessions kept, will retry", metadata: ["account.id": "\(account.id)"])
            try await store.scheduleValidation(accountID: account.id, at: now.addingTimeInterval(delay))
        }
    }
}
