import AppleID
public import Foundation

/// The lifecycle events the app's other backends are told about (a webhook's `type`).
public enum WebhookEventType: String, Sendable, CaseIterable {
    /// The account was deleted (`reason`: `user_request`, `operator`, `consent_revoked`, `apple_account_deleted`).
    case deleted = "account.deleted"
    /// Apple ended the grant (`reason`: `invalid_grant`, `consent_revoked`).
    case credentialRevoked = "account.credential_revoked"
    /// Apple's email forwarding changed (`email_forwarding`).
    case emailForwardingChanged = "account.email_forwarding_changed"
    /// App transfer: the account's exchange on the receiving side succeeded.
    case transferred = "account.transferred"
}

/// Turns a lifecycle event into its outbox rows: one per configured webhook URL, written in the transaction of the
/// change the event reports. It describes itself with the URLs' credentials redacted.
public struct WebhookFanout: Sendable, CustomStringConvertible {
    /// Where events go (`ORCHARD_WEBHOOK_URLS`).
    let urls: [String]
    /// The ids of events and rows.
    let random: any RandomSource

    /// The URLs as logs show them.
    public var description: String { "WebhookFanout(urls: \(urls.map(URLRedaction.redactingCredentials)))" }

    /// Creates the fan-out to `urls`.
    public init(urls: [String], random: any RandomSource) {
        self.urls = urls
        self.random = random
    }

    /// The rows for an event of `type` about `accountID`; none, and no body encoded, when no URL is configured, so
    /// no encoding is spent on rows never written (`Benchmarks/run`'s `POST /v1/apple/notifications` ingest guards this).
    public func deliveries(
        _ type: WebhookEventType,
        accountID: String,
        at now: Date,
        reason: String? = nil,
        emailForwarding: EmailForwarding? = nil
    ) -> [WebhookDelivery] {
        guard !urls.isEmpty else { return [] }
        let event = WebhookEvent(
            type: type.rawValue,
            id: random.id("evt_", at: now),
            occurredAt: now,
            accountID: accountID,
            reason: reason,
            emailForwarding: emailForwarding
        )
        let body = event.body
        return urls.map { url in
            WebhookDelivery(
                id: random.id("whd_", at: now),
                eventID: event.id,
                eventType: event.type,
                url: url,
                body: body,
                attempts: 0,
                createdAt: event.occurredAt
            )
        }
    }
}
