public import Foundation
public import SQLKit

/// The kinds of background job Orchard claims from the database, each from its own table.
public enum ClaimedJob: String, Sendable, CaseIterable {
    /// Tokens waiting for Apple's `/auth/revoke` (`revocations`).
    case revocations
    /// Apple's notifications waiting to be acted on (`notification_inbox`).
    case notifications
    /// Webhook deliveries waiting to be sent (`webhook_outbox`).
    case webhooks
    /// Accounts whose refresh token is due for validation (`accounts`).
    case validations
}

extension SQLAccountStore {
    /// The subquery that picks the rows a claim takes: at most `limit` rows of `job`'s table whose due time has come and
    /// that no live lease holds, oldest first, locked with ``lockingClause``.
    ///
    /// Each range starts at the table's due-time index (`next_attempt_at`, or `next_validation_at` for accounts), and
    /// finished rows have no due time, so a tick reads only due rows however large the table grows. Each claim runs this
    /// inside its `UPDATE`; the storage tests `EXPLAIN` it on every backend to hold that promise.
    public func dueRows(_ job: ClaimedJob, now: Date, limit: Int) -> SQLQueryString {
        let now = now.milliseconds
        switch job {
        case .revocations:
            return """
                SELECT id FROM revocations
                WHERE next_attempt_at <= \(bind: now) AND (lease_until IS NULL OR lease_until <= \(bind: now))
                ORDER BY next_attempt_at LIMIT \(bind: limit) \(unsafeRaw: lockingClause)
                """
        case .notifications:
            return """
                SELECT jti FROM notification_inbox
                WHERE next_attempt_at <= \(bind: now) AND processed_at IS NULL
                  AND (lease_until IS NULL OR lease_until <= \(bind: now))
                ORDER BY next_attempt_at LIMIT \(bind: limit) \(unsafeRaw: lockingClause)
                """
        case .webhooks:
            return """
                SELECT id FROM webhook_outbox
                WHERE next_attempt_at <= \(bind: now) AND status = 'pending'
                  AND (lease_until IS NULL OR lease_until <= \(bind: now))
                ORDER BY next_attempt_at LIMIT \(bind: limit) \(unsafeRaw: lockingClause)
                """
        case .validations:
            // A claimed account's due time moves to the end of its lease, so it needs no lease column of its own.
            return """
                SELECT id FROM accounts
                WHERE next_validation_at <= \(bind: now) AND apple_credential = 'valid' AND sealed_refresh_token IS NOT NULL
                ORDER BY next_validation_at LIMIT \(bind: limit) \(unsafeRaw: lockingClause)
                """
        }
    }
}
