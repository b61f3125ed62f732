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
/// notification with nothing to act on is marked with why (`unknown_subject`, `unknown_type`, `no_event`,
/// `predates_account`, `predates_grant`). A failure is retried with backoff.
///
/// The jobs of a batch about one subject run one after the other, in the order they arrived, so two events about one
/// account apply in Apple's order.
public struct NotificationHandler: JobHandler {
    /// The inbox outcome a finished notification is marked with, unless its account change marked it already.
    public typealias Done = InboxOutcome

    let inbox: any NotificationInbox
    let accounts: any AccountLookup
    let changes: AccountChanges
    let vault: TokenVault
    let clock: any WallClock
    /// When a failed notification is tried again.
    let backoff: Backoff
    let policy: Policy
    let metrics: any MetricsFactory
    /// Told what each pass claimed and finished, so that the endpoint stores no faster than processing clears.
    let backpressure: InboxBackpressure

    /// The kind.
    public var kind: JobKind { .notifications }
    /// Claims per pass. One pass runs at a time (a subject's notifications in order), so under a burst the pass's
    /// round trips queue behind the burst's requests: a large batch spreads them over more notifications
    /// (`Benchmarks/run --start-postgres`, "PG POST /v1/apple/notifications").
    public var batchSize: Int { 1024 }
    /// Notifications about different subjects at once (their account changes then share a commit); those about one
    /// subject one after the other, in arrival order (see ``orderingKey(for:)``).
    public var concurrency: Int { 32 }

    /// The subject's salted hash: Apple's events about one user are acted on in the order they arrived.
    public func orderingKey(for entry: InboxEntry) -> String? { entry.subjectDigest }

    /// Claims due, unprocessed notifications, in the order they arrived.
    public func claim(now: Date, leaseUntil: Date, limit: Int, logger: Logger) async throws -> [InboxEntry] {
        let claimed = try await inbox.claimNotifications(now: now, leaseUntil: leaseUntil, limit: limit)
        backpressure.claimed(claimed.count, limit: limit)
        return claimed.sorted { ($0.receivedAt, $0.jti) < ($1.receivedAt, $1.jti) }
    }

    /// Acts on most of a batch in a few statements, in rounds: the first notification of each subject, then the second,
    /// and so on, each round one read of every account it is about, then one transaction for all its email-forwarding
    /// changes with their inbox marks, after the round before it committed; notifications with nothing to act on are
    /// recorded by the engine's completion. Left to the one-by-one path: notifications that end sessions (they announce
    /// to the replicas, one change each), any whose event cannot be read, and every later notification of their
    /// subjects (their order).
    public func performTogether(_ entries: [InboxEntry], logger: Logger) async -> [JobOutcome<InboxOutcome>?] {
        var outcomes = [JobOutcome<InboxOutcome>?](repeating: nil, count: entries.count)
        // The claim sorted the entries by arrival, so a subject's k-th notification is in round k.
        var rounds: [[Int]] = []
        var taken: [String: Int] = [:]
        for (index, entry) in entries.enumerated() {
            let round = taken[entry.subjectDigest, default: 0]
            taken[entry.subjectDigest] = round + 1
            if rounds.count == round { rounds.append([]) }
            rounds[round].append(index)
        }
        var oneByOne: Set<String> = []
        for round in rounds {
            let together = round.filter { !oneByOne.contains(entries[$0].subjectDigest) }
            await performRound(together, of: entries, into: &outcomes, logger: logger)
            for index in round where outcomes[index] == nil { oneByOne.insert(entries[index].subjectDigest) }
        }
        return outcomes
    }

    /// One round of ``performTogether(_:logger:)``: at most one notification per subject.
    private func performRound(
        _ indices: [Int],
        of entries: [InboxEntry],
        into outcomes: inout [JobOutcome<InboxOutcome>?],
        logger: Logger
    ) async {
        guard !indices.isEmpty, let readings = try? await read(indices.map { entries[$0] }, logger: logger) else { return }
        var changing: [(index: Int, type: AppleNotificationType)] = []
        var batch: [(accountID: String, forwarding: EmailForwarding, completesNotification: String, condition: ChangeCondition)] = []
        for (index, reading) in zip(indices, readings) {
            switch reading {
            case .failure:
                // Left to the one-by-one path, which retries it with its own backoff.
                continue
            case .success(.recorded(let outcome)):
                outcomes[index] = .done(outcome)
            case .success(.decided(let event, let account, .setEmailForwarding(let forwarding, let condition))):
                changing.append((index, event.type))
                batch.append((account.id, forwarding, entries[index].jti, condition))
            case .success(.decided):
                continue
            }
        }
        guard !batch.isEmpty else { return }
        do {
            let applied = try await changes.setEmailForwarding(batch, at: clock.now())
            for (((index, type), change), outcome) in zip(zip(changing, batch), applied) {
                Counter(label: "orchard_notifications_processed_total", dimensions: [("type", type.rawValue)], factory: metrics).increment()
                outcomes[index] = .done(InboxOutcome(recorded(outcome, entries[index], logger: logger), accountID: change.accountID))
            }
        } catch {
            // Each is tried again one by one, with its own retry.
            logger.warning("a batch of notifications could not be recorded together", metadata: ["error": "\(error)"])
        }
    }

    /// A notification read and decided.
    enum Reading {
        /// Nothing to act on: recorded with this outcome (no event stored, an unknown subject, or the decision ignores it).
        case recorded(InboxOutcome)
        /// To act on: the decision about this account.
        case decided(AppleNotificationEvent, AccountRecord, Decision)
    }

    /// The one step both paths take: opens each entry's event, finds every account they are about in one read, and
    /// decides. An event that cannot be opened or decoded fails in its own place; a store that cannot be read throws.
    private func read(_ entries: [InboxEntry], logger: Logger) async throws -> [Result<Reading, any Error>] {
        // Each entry's event and the hashes its subject may be stored under; `nil` when its sealed event is gone.
        let opened = entries.map { entry in
            Result { () throws -> (event: AppleNotificationEvent, candidates: [String])? in
                guard let sealed = entry.sealedEvent else { return nil }
                let json = try vault.open(sealed, context: SealingContext.notification(entry.jti))
                let event = try JSONDecoder().decode(AppleNotificationEvent.self, from: Data(json.value.utf8))
                return (event, vault.subjectHashCandidates(event.sub))
            }
        }
        let candidates = opened.flatMap { (try? $0.get())??.candidates ?? [] }
        let found = candidates.isEmpty ? [] : try await accounts.accounts(subjectHashes: candidates)
        let bySubjectHash = Dictionary(found.map { ($0.subjectHash, $0) }, uniquingKeysWith: { first, _ in first })
        return zip(entries, opened).map { entry, opening in
            opening.map { opened -> Reading in
                guard let (event, candidates) = opened else { return .recorded(InboxOutcome(.noEvent)) }
                guard let account = candidates.lazy.compactMap({ bySubjectHash[$0] }).first else {
                    logger.debug("notification for an unknown subject recorded", metadata: ["notification.jti": "\(entry.jti)"])
                    return .recorded(InboxOutcome(.unknownSubject))
                }
                let decision = Self.decide(event, about: account, policy: policy)
                if case .ignore(let why) = decision {
                    logIgnored(why, entry, event, logger: logger)
                    return .recorded(InboxOutcome(why, accountID: account.id))
                }
                return .decided(event, account, decision)
            }
        }
    }

    /// Acts on one notification; a failure is retried with backoff.
    public func perform(_ entry: InboxEntry, logger: Logger) async -> JobOutcome<InboxOutcome> {
        do {
            return .done(try await process(entry, logger: logger))
        } catch {
            logger.warning("notification processing failed; will retry", metadata: ["notification.jti": "\(entry.jti)", "error": "\(error)"])
            return .retry(at: backoff.retryAt(afterAttempts: entry.attempts + 1, from: clock.now()), error: "\(error)")
        }
    }

    /// Marks the finished notifications processed and releases the others, in one transaction.
    public func complete(_ results: [JobResult<InboxEntry, InboxOutcome>], at now: Date) async throws {
        try await inbox.completeNotifications(results, at: now)
        backpressure.processed(results.count)
    }

    /// The notification's `jti`.
    public func metadata(for entry: InboxEntry) -> Logger.Metadata {
        ["notification.jti": "\(entry.jti)"]
    }

    /// Acts on the notification; returns the inbox outcome to record.
    private func process(_ entry: InboxEntry, logger: Logger) async throws -> InboxOutcome {
        let now = clock.now()
        guard let reading = try await read([entry], logger: logger).first else { return InboxOutcome(.noEvent) }
        let (event, account, decision): (AppleNotificationEvent, AccountRecord, Decision)
        switch try reading.get() {
        case .recorded(let outcome): return outcome
        case .decided(let read, let found, let decided): (event, account, decision) = (read, found, decided)
        }
        let outcome: AccountChangeOutcome
        switch decision {
        case .ignore(let why):
            // The reading records what the decision ignores; kept for the switch's sake.
            return InboxOutcome(why, accountID: account.id)
        case .setEmailForwarding(let forwarding, let condition):
            outcome = try await changes.setEmailForwarding(
                accountID: account.id,
                forwarding,
                completesNotification: entry.jti,
                condition: condition,
                at: now
            )
        case .revokeCredential(let condition):
            outcome = try await changes.revokeCredential(
                accountID: account.id,
                reason: .consentRevoked,
                completesNotification: entry.jti,
                condition: condition,
                at: now
            )
        case .delete(let reason, let condition):
            outcome = try await delete(account, reason: reason, jti: entry.jti, condition: condition, logger: logger)
        }
        Counter(label: "orchard_notifications_processed_total", dimensions: [("type", event.type.rawValue)], factory: metrics).increment()
        return InboxOutcome(recorded(outcome, entry, logger: logger), accountID: account.id)
    }

    /// The inbox outcome of a change. An applied change marked the notification processed in its own transaction;
    /// recording is then a no-op.
    private func recorded(_ outcome: AccountChangeOutcome, _ entry: InboxEntry, logger: Logger) -> InboxOutcome.Kind {
        switch outcome {
        case .applied: return .processed
        case .gone: return .unknownSubject
        case .superseded:
            logger.info(
                "notification older than the account's latest grant recorded and not acted on",
                metadata: ["notification.jti": "\(entry.jti)"]
            )
            return .predatesGrant
        }
    }

    /// Logs a notification recorded without being acted on.
    private func logIgnored(_ why: InboxOutcome.Kind, _ entry: InboxEntry, _ event: AppleNotificationEvent, logger: Logger) {
        if why == .predatesAccount || why == .predatesGrant {
            logger.info(
                "notification older than its account or its latest grant recorded and not acted on",
                metadata: ["notification.jti": "\(entry.jti)"]
            )
        } else {
            logger.warning("notification of an unknown type recorded and ignored", metadata: ["notification.type": "\(event.type.rawValue)"])
        }
    }

    private func delete(
        _ account: AccountRecord,
        reason: DeletionReason,
        jti: String,
        condition: ChangeCondition,
        logger: Logger
    ) async throws -> AccountChangeOutcome {
        let outcome = try await changes.delete(
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
}
