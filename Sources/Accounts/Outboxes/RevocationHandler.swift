import AppleID
public import Foundation
public import Logging
import Metrics

extension JobKind {
    /// Tokens in the revocation outbox, waiting for Apple's `/auth/revoke`.
    public static let revocations = JobKind("revocations")
}

/// Asks Apple to revoke the tokens of deleted accounts: on acceptance the row goes; otherwise it is retried with backoff
/// (from 2 s, doubling with jitter, at most 10 minutes apart) until Apple accepts. Jobs of a batch run concurrently.
///
/// A deletion request runs this handler on its own revocation (written already leased) with its shorter wait.
public struct RevocationHandler: JobHandler {
    /// The outbox it claims from and records into.
    let store: any RevocationOutbox
    /// Opens the queued tokens.
    let vault: TokenVault
    /// Apple's `/auth/revoke`.
    let apple: any AppleGateway
    /// The time of retries.
    let clock: any WallClock
    /// When a refused revocation is tried again.
    let backoff: Backoff
    /// Where `orchard_revocations_total` and `orchard_apple_client_rejected_total` go.
    let metrics: any MetricsFactory
    /// How long one call to Apple may take.
    let deadline: Duration

    /// The kind.
    public var kind: JobKind { .revocations }
    /// Claims per pass.
    public var batchSize: Int { 32 }
    /// Every revocation of a batch at once.
    public var concurrency: Int { batchSize }
    /// Passes that may overlap: revocations need no order between passes (each claimed row is leased), and a pass held
    /// by a slow Apple must not hold up the claim of a row whose lease ran out.
    public var passesInFlight: Int { 4 }
    /// The call's deadline plus 5 seconds.
    public var leaseDuration: Duration { deadline + .seconds(5) }

    /// Claims due, unheld revocations.
    public func claim(now: Date, leaseUntil: Date, limit: Int, logger: Logger) async throws -> [RevocationJob] {
        let claimed = try await store.claimRevocations(now: now, leaseUntil: leaseUntil, limit: limit)
        // The backlog operators are alerted on (deploy/monitoring): how many, and how long the oldest has waited.
        if let backlog = try? await store.revocationBacklog() {
            Gauge(label: "orchard_revocations_pending", factory: metrics).record(backlog.count)
            Gauge(label: "orchard_revocation_oldest_pending_seconds", factory: metrics).record(
                backlog.oldestDeletion.map { max(0, now.timeIntervalSince($0)) } ?? 0
            )
        }
        return claimed
    }

    /// Opens the queued token and asks Apple to revoke it.
    ///
    /// A token that cannot be opened with the configured vault keys (its key was removed) is a failed attempt,
    /// `vault_key_missing`, retried with backoff like any other: visible to operators, never a tight loop.
    public func perform(_ job: RevocationJob, logger: Logger) async throws -> JobOutcome<Void> {
        let token: Redacted<String>
        do {
            token = try vault.open(job.sealedToken, context: SealingContext.revocation(job.id))
        } catch {
            let attempts = job.attempts + 1
            logger.error(
                "a queued token cannot be opened with the configured vault keys: put its key back in ORCHARD_VAULT_KEYS",
                metadata: ["revocation.id": "\(job.id)", "vault.key_id": "\(vault.keyID(of: job.sealedToken) ?? "?")"]
            )
            Counter(label: "orchard_revocations_total", dimensions: [("outcome", "retry")], factory: metrics).increment()
            return .retry(at: backoff.retryAt(afterAttempts: attempts, from: clock.now()), error: "vault_key_missing")
        }
        do {
            try await apple.revoke(token, hint: job.hint, clientID: job.clientID, deadline: deadline)
        } catch {
            let mapped = AccountsError.fromApple(error)
            let attempts = job.attempts + 1
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
            return .retry(at: backoff.retryAt(afterAttempts: attempts, from: clock.now()), error: mapped.code.rawValue)
        }
        Counter(label: "orchard_revocations_total", dimensions: [("outcome", "revoked")], factory: metrics).increment()
        return .done
    }

    /// Removes the accepted revocations and releases the others, in one transaction.
    public func complete(_ results: [JobResult<RevocationJob, Void>], at now: Date) async throws {
        try await store.completeRevocations(results, at: now)
    }

    /// The row's id.
    public func metadata(for job: RevocationJob) -> Logger.Metadata {
        ["revocation.id": "\(job.id)"]
    }
}
