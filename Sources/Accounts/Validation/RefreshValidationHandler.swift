import AppleID
public import Foundation
public import Logging
import Metrics

extension JobKind {
    /// Accounts whose refresh token is due for validation at Apple.
    public static let validations = JobKind("refresh-validation")
}

/// Validates each due account's refresh token at Apple once per interval, while somebody is signed in.
///
/// `invalid_grant` ends every session of the account (`apple_credential_revoked`), marks its credential revoked and
/// sends `account.credential_revoked`; transient failures and `invalid_client` keep the sessions and retry with
/// backoff. An account without a live session is left until its next sign-in, except an imported token's first check. Up to 16 accounts of a batch of 64 are
/// validated at once. Each claim records the backlog left after it (`orchard_refresh_validations_due`,
/// `orchard_refresh_validation_oldest_overdue_seconds`).
public struct RefreshValidationHandler: JobHandler {
    /// What a finished validation records.
    public typealias Done = ValidationResult

    let schedule: any ValidationSchedule
    let apple: any AppleGateway
    let vault: TokenVault
    let changes: AccountChanges
    let clock: any WallClock
    let timing: ValidationTiming
    let backoff: Backoff
    let metrics: any MetricsFactory

    /// The kind.
    public var kind: JobKind { .validations }
    /// Claims per pass: as many as run at once, so that each claimed validation starts its call at once and its
    /// 15-second lease covers it.
    public var batchSize: Int { 16 }
    /// Calls to Apple at once.
    public var concurrency: Int { 16 }
    /// Passes that may overlap: validations need no order between passes (each claimed account is leased), and a pass
    /// held by a slow call must not hold up the claim of an account whose lease ran out (a crashed replica's is taken
    /// over within its lease plus a tick).
    public var passesInFlight: Int { 4 }

    /// Claims due accounts through the due-time index, then records the backlog left.
    public func claim(now: Date, leaseUntil: Date, limit: Int, logger: Logger) async throws -> [AccountRecord] {
        let claimed = try await schedule.claimDueValidations(now: now, leaseUntil: leaseUntil, limit: limit)
        do {
            let backlog = try await schedule.validationBacklog(now: now)
            Gauge(label: "orchard_refresh_validations_due", factory: metrics).record(backlog.count)
            Gauge(label: "orchard_refresh_validation_oldest_overdue_seconds", factory: metrics).record(
                backlog.oldestDue.map { now.timeIntervalSince($0) } ?? 0
            )
        } catch {
            logger.warning("cannot read the validation backlog", metadata: ["error": "\(error)"])
        }
        return claimed
    }

    /// Validates one account's refresh token at Apple.
    ///
    /// - Throws: a storage or vault fault (left to its lease: the account is due again when the lease runs out).
    public func perform(_ account: AccountRecord, logger: Logger) async throws -> JobOutcome<ValidationResult> {
        // An imported token (`unknown`: never checked here) is checked once whoever is signed in, to set its state.
        let firstCheck = account.appleCredential == .unknown
        let keptAlive = try await firstCheck ? true : schedule.hasLiveSession(accountID: account.id, now: clock.now())
        guard keptAlive else {
            // Nobody is signed in: nothing to keep alive. The next sign-in validates by its code exchange.
            Counter(label: "orchard_refresh_validations_total", dimensions: [("outcome", "dormant")], factory: metrics).increment()
            return .done(.unscheduled)
        }
        guard let sealed = account.sealedRefreshToken else { return .done(.unscheduled) }
        let refreshToken = try vault.open(sealed, context: SealingContext.account(account.id, .refreshToken))
        let response: AppleTokenResponse
        do {
            response = try await apple.validateRefreshToken(refreshToken, clientID: account.clientID)
        } catch {
            return try await failure(account, error: AccountsError.fromApple(error), logger: logger)
        }
        let sealedAccess = try response.accessToken.map { try vault.seal($0, context: SealingContext.account(account.id, .accessToken)) }
        Counter(label: "orchard_refresh_validations_total", dimensions: [("outcome", "valid")], factory: metrics).increment()
        let now = clock.now()
        return .done(.validated(at: now, sealedAccessToken: sealedAccess, nextValidationAt: timing.next(after: now)))
    }

    /// Records the validations and the next due times, in one transaction.
    public func complete(_ results: [JobResult<AccountRecord, ValidationResult>], at now: Date) async throws {
        try await schedule.completeValidations(results, at: now)
    }

    /// The account's id.
    public func metadata(for account: AccountRecord) -> Logger.Metadata {
        ["account.id": "\(account.id)"]
    }

    private func failure(_ account: AccountRecord, error: AccountsError, logger: Logger) async throws -> JobOutcome<ValidationResult> {
        let now = clock.now()
        switch error.code {
        case .authorizationCodeRejected:
            // invalid_grant: the user revoked the app, changed their password, or Apple ended the grant.
            Counter(label: "orchard_refresh_validations_total", dimensions: [("outcome", "invalid_grant")], factory: metrics).increment()
            // Only if the token Apple refused is still the one held: a sign-in may have stored a new grant's meanwhile.
            let outcome = try await changes.revokeCredential(
                accountID: account.id,
                reason: .invalidGrant,
                completesNotification: nil,
                condition: .refreshToken(account.sealedRefreshToken),
                at: now
            )
            guard outcome != .superseded else {
                logger.info("Apple refused a refresh token a sign-in has replaced: sessions kept", metadata: ["account.id": "\(account.id)"])
                return .done(.superseded)
            }
            logger.info("Apple says the grant is gone: the account was signed out everywhere", metadata: ["account.id": "\(account.id)"])
            return .done(.unscheduled)
        case .appleClientRejected:
            Counter(label: "orchard_refresh_validations_total", dimensions: [("outcome", "client_rejected")], factory: metrics).increment()
            Counter(label: "orchard_apple_client_rejected_total", dimensions: [("endpoint", "token")], factory: metrics).increment()
            logger.critical(
                "Apple refused Orchard's client secret during refresh validation: nobody is signed out; fix APPLE_TEAM_ID, APPLE_KEY_ID or APPLE_PRIVATE_KEY_FILE",
                metadata: ["account.id": "\(account.id)", "apple.client_id": "\(account.clientID)"]
            )
            return .retry(at: now.addingTimeInterval(backoff.policy.maximumDelay), error: error.code.rawValue)
        default:
            Counter(label: "orchard_refresh_validations_total", dimensions: [("outcome", "unavailable")], factory: metrics).increment()
            // The outage's length so far stands for the number of tries: retries start after 2 s and double.
            let due = (account.lastValidatedAt ?? now).addingTimeInterval(timing.interval.seconds)
            let overdue = max(1, now.timeIntervalSince(due) / backoff.policy.initialDelay)
            logger.warning("Apple unavailable for refresh validation; sessions kept, will retry", metadata: ["account.id": "\(account.id)"])
            return .retry(at: backoff.retryAt(afterAttempts: 1 + Int(log2(overdue)), from: now), error: error.code.rawValue)
        }
    }
}
