import AppleID
public import Foundation
public import Logging
import Metrics

extension JobKind {
    /// Apple's notifications in the inbox, waiting to be acted on.
    public static let notifications = JobKind("notifications")
}

/// Acts once on each stored notification of Apple's: email forwarding changes, consent revoked (sign-out or deletion,
/// by policy) and Apple ID deletion. An account change marks its notification processed in its own transaction; a
/// notification with nothing to act on is marked with why (`unknown_subject`, `unknown_type`, `no_event`). A failure is
/// retried with backoff.
///
/// The jobs of a batch run one after the other, in the order they arrived, so two events about one account apply in
/// Apple's order.
public struct NotificationHandler: JobHandler {
    /// The inbox outcome a finished notification is marked with, unless its account change marked it already.
    public typealias Done = String

    /// The lifecycle whose store, vault and account changes the handler uses.
    let accounts: Accounts

    /// The kind.
    public var kind: JobKind { .notifications }
    /// Claims per pass.
    public var batchSize: Int { 128 }
    /// Notifications about different subjects at once (their account changes then share a commit); those about one
    /// subject one after the other, in arrival order (see ``orderingKey(for:)``).
    public var concurrency: Int { 32 }

    /// The subject's salted hash: Apple's events about one user are acted on in the order they arrived.
    public func orderingKey(for entry: InboxEntry) -> String? { entry.subjectDigest }

    /// Creates the handler over the lifecycle, whose account changes it applies.
    public init(accounts: Accounts) {
        self.accounts = accounts
    }

    /// Claims due, unprocessed notifications.
    public func claim(now: Date, leaseUntil: Date, limit: Int, logger: Logger) async throws -> [InboxEntry] {
        try await accounts.store.claimNotifications(now: now, leaseUntil: leaseUntil, limit: limit)
    }

    /// Acts on one notification; a failure is retried with backoff.
    public func perform(_ entry: InboxEntry, logger: Logger) async -> JobOutcome<String> {
        do {
            return .done(try await process(entry, logger: logger))
        } catch {
            let attempts = entry.attempts + 1
            let delay = accounts.configuration.retryPolicy.delay(afterAttempts: attempts, unit: accounts.random.unit())
            logger.warning("notification processing failed; will retry", metadata: ["notification.jti": "\(entry.jti)", "error": "\(error)"])
            return .retry(at: accounts.clock.now().addingTimeInterval(delay), error: "\(error)")
        }
    }

    /// Marks the finished notifications processed and releases the others, in one transaction.
    public func complete(_ results: [JobResult<InboxEntry, String>], at now: Date) async throws {
        try await accounts.store.completeNotifications(results, at: now)
    }

    /// The notification's `jti`.
    public func metadata(for entry: InboxEntry) -> Logger.Metadata {
        ["notification.jti": "\(entry.jti)"]
    }

    /// Acts on the notification; returns the inbox outcome to record.
    private func process(_ entry: InboxEntry, logger: Logger) async throws -> String {
        let now = accounts.clock.now()
        guard let sealed = entry.sealedEvent else { return "no_event" }
        let json = try accounts.vault.open(sealed, context: Accounts.notificationContext(entry.jti))
        let event = try JSONDecoder().decode(AppleNotificationEvent.self, from: Data(json.value.utf8))
        guard let account = try await accounts.store.account(subjectHashes: accounts.vault.subjectHashCandidates(event.sub)) else {
            logger.debug("notification for an unknown subject recorded", metadata: ["notification.jti": "\(entry.jti)"])
            return "unknown_subject"
        }
        // Late notifications: the event happened before this account existed, or before its latest grant (the user
        // signed up or authorized the app again after it), so it is about an earlier grant and must not touch the
        // newer one. The change re-checks the grant in its own statement, against a sign-in that commits meanwhile.
        let leeway = accounts.configuration.clockLeeway.seconds
        if event.eventTime < account.createdAt.addingTimeInterval(-leeway) {
            logger.info("notification older than its account recorded and not acted on", metadata: ["notification.jti": "\(entry.jti)"])
            return "predates_account"
        }
        if event.eventTime < account.latestGrant.addingTimeInterval(-leeway) {
            logger.info(Self.predatesGrant, metadata: ["notification.jti": "\(entry.jti)"])
            return "predates_grant"
        }
        let condition = ChangeCondition.grantedNoLaterThan(event.eventTime.addingTimeInterval(leeway))
        let outcome: AccountChangeOutcome
        switch event.type {
        case .emailEnabled, .emailDisabled:
            let forwarding: EmailForwarding = event.type == .emailEnabled ? .enabled : .disabled
            let webhook = WebhookEvent(
                type: "account.email_forwarding_changed",
                id: accounts.randomID("evt_"),
                occurredAt: now,
                accountID: account.id,
                emailForwarding: forwarding
            )
            outcome = try await accounts.store.apply(
                AccountChange(
                    accountID: account.id,
                    action: .setEmailForwarding(forwarding),
                    webhooks: accounts.webhooks(for: webhook),
                    completesNotification: entry.jti,
                    condition: condition,
                    at: now
                )
            )
        case .consentRevoked where accounts.configuration.consentRevokedPolicy == .signOut:
            outcome = try await accounts.revokeCredential(
                account,
                reason: "consent_revoked",
                completesNotification: entry.jti,
                condition: condition,
                at: now
            )
        case .consentRevoked:
            outcome = try await accounts.deleteWithoutRevoking(account, reason: .consentRevoked, jti: entry.jti, condition: condition, logger: logger)
        case .accountDelete:
            outcome = try await accounts.deleteWithoutRevoking(
                account,
                reason: .appleAccountDeleted,
                jti: entry.jti,
                condition: condition,
                logger: logger
            )
        case .unknown(let type):
            logger.warning("notification of an unknown type recorded and ignored", metadata: ["notification.type": "\(type)"])
            return "unknown_type"
        }
        accounts.wakeups.notify(.webhooks)
        Counter(label: "orchard_notifications_processed_total", dimensions: [("type", event.type.rawValue)], factory: accounts.metrics)
            .increment()
        // An applied change marked the notification processed in its own transaction; recording is then a no-op.
        switch outcome {
        case .applied: return "processed"
        case .gone: return "unknown_subject"
        case .superseded:
            logger.info(Self.predatesGrant, metadata: ["notification.jti": "\(entry.jti)"])
            return "predates_grant"
        }
    }

    private static var predatesGrant: Logger.Message {
        "notification older than the account's latest grant recorded and not acted on"
    }
}
