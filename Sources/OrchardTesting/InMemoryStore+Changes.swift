public import Accounts
public import Foundation
import Synchronization

extension InMemoryStore: AccountChangeStore {
    /// A fixed salt.
    public func auditSalt() async throws -> String { "in-memory-salt" }

    /// Applies a change under the lock, its condition checked first, as the SQL store does in the change's statement.
    public func apply(_ change: AccountChange) async throws -> AccountChangeOutcome {
        try tables.withLock { tables in
            guard let account = tables.accounts[change.accountID] else { return .gone }
            guard Self.meets(account, change.condition) else { return .superseded }
            var revocation: RevocationJob?
            switch change.action {
            case .delete(let audit, let plan):
                tables.accounts[change.accountID] = nil
                tables.validationLeases[change.accountID] = nil
                Self.endSessions(of: change.accountID, reason: .accountDeleted, at: change.at, in: &tables)
                tables.audit.append(audit)
                tables.events.removeAll { $0.accountID == change.accountID }
                let removed = RemovedTokens(
                    accountID: account.id,
                    clientID: account.clientID,
                    sealedRefreshToken: account.sealedRefreshToken,
                    sealedAccessToken: account.sealedAccessToken
                )
                if let job = try plan?.job(for: removed) {
                    tables.revocations[job.id] = job
                    revocation = job
                }
            case .setEmailForwarding(let forwarding):
                tables.accounts[change.accountID]?.emailForwarding = forwarding
            case .revokeCredential:
                tables.accounts[change.accountID]?.appleCredential = .revoked
                Self.endSessions(of: change.accountID, reason: .appleCredentialRevoked, at: change.at, in: &tables)
            }
            for delivery in change.webhooks {
                tables.webhooks.append(
                    WebhookDeliveryStatus(delivery: delivery, status: "pending", lastError: nil, nextAttemptAt: delivery.createdAt)
                )
            }
            tables.add(change.history)
            if let jti = change.completesNotification {
                tables.inbox[jti]?.processed = (change.at, .processed)
                tables.inbox[jti]?.entry.sealedEvent = nil
            }
            return .applied(revocation: revocation)
        }
    }

    /// Each change applied alone, only while its notification is unprocessed.
    public func applyForwardingChanges(_ changes: [AccountChange]) async throws -> [AccountChangeOutcome] {
        var outcomes: [AccountChangeOutcome] = []
        for change in changes {
            let unprocessed = tables.withLock { tables in change.completesNotification.map { tables.inbox[$0]?.processed == nil } ?? true }
            outcomes.append(unprocessed ? try await apply(change) : .gone)
        }
        return outcomes
    }

    static func endSessions(of accountID: String, reason: SessionEndReason, at: Date, in tables: inout Tables) {
        for (hash, session) in tables.sessions where session.accountID == accountID && session.endedAt == nil {
            tables.sessions[hash]?.endedAt = at
            tables.sessions[hash]?.endReason = reason
        }
    }
}

extension InMemoryStore: NotificationInbox {
    /// Stores a notification unless its `jti` is known.
    public func insertNotification(_ entry: InboxEntry, nextAttemptAt: Date) async throws -> Bool {
        tables.withLock { tables in
            guard tables.inbox[entry.jti] == nil else { return false }
            tables.inbox[entry.jti] = InboxRow(entry: entry, nextAttemptAt: nextAttemptAt)
            return true
        }
    }

    /// Leases due, unprocessed notifications, oldest first.
    public func claimNotifications(now: Date, leaseUntil: Date, limit: Int) async throws -> [InboxEntry] {
        tables.withLock { tables in
            let due = tables.inbox.values
                .filter { $0.processed == nil && ($0.nextAttemptAt.map { $0 <= now } ?? false) && ($0.leaseUntil.map { $0 <= now } ?? true) }
                .sorted { $0.entry.receivedAt < $1.entry.receivedAt }
                .prefix(limit)
            for row in due { tables.inbox[row.entry.jti]?.leaseUntil = leaseUntil }
            return due.map(\.entry)
        }
    }

    /// Marks finished notifications (unless a change marked them) and reschedules the others.
    public func completeNotifications(_ results: [JobResult<InboxEntry, InboxOutcome>], at now: Date) async throws {
        tables.withLock { tables in
            for result in results {
                let jti = result.job.jti
                tables.inbox[jti]?.leaseUntil = nil
                switch result.outcome {
                case .done(let outcome):
                    if tables.inbox[jti]?.processed == nil {
                        tables.inbox[jti]?.processed = (now, outcome.kind)
                        tables.inbox[jti]?.entry.sealedEvent = nil
                    }
                case .retry(let next, _):
                    tables.inbox[jti]?.nextAttemptAt = next
                    tables.inbox[jti]?.entry.attempts += 1
                case .failed:
                    tables.inbox[jti]?.processed = (now, .failed)
                }
            }
        }
    }
}

extension InMemoryStore: RevocationOutbox {
    /// Leases due, unheld revocations, oldest first.
    public func claimRevocations(now: Date, leaseUntil: Date, limit: Int) async throws -> [RevocationJob] {
        tables.withLock { tables in
            let due = tables.revocations.values
                .filter { $0.nextAttemptAt <= now && ($0.leaseUntil.map { $0 <= now } ?? true) }
                .sorted { $0.nextAttemptAt < $1.nextAttemptAt }
                .prefix(limit)
            for job in due { tables.revocations[job.id]?.leaseUntil = leaseUntil }
            return due.map { tables.revocations[$0.id]! }
        }
    }

    /// How many revocations wait, and the oldest one's deletion.
    public func revocationBacklog() async throws -> (count: Int, oldestDeletion: Date?) {
        tables.withLock { tables in (tables.revocations.count, tables.revocations.values.map(\.createdAt).min()) }
    }

    /// Removes accepted revocations and reschedules the others.
    public func completeRevocations(_ results: [JobResult<RevocationJob, Void>], at now: Date) async throws {
        tables.withLock { tables in
            for result in results {
                let id = result.job.id
                switch result.outcome {
                case .done: tables.revocations[id] = nil
                case .retry(let next, let error):
                    tables.revocations[id]?.attempts += 1
                    tables.revocations[id]?.nextAttemptAt = next
                    tables.revocations[id]?.lastError = error
                    tables.revocations[id]?.leaseUntil = nil
                case .failed: tables.revocations[id]?.leaseUntil = nil
                }
            }
        }
    }
}
