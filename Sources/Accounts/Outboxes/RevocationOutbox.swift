public import Foundation

/// The revocation outbox, as ``RevocationHandler`` uses it.
public protocol RevocationOutbox: Sendable {
    /// Claims up to `limit` revocations due at `now` that nobody holds, leasing them until `leaseUntil`.
    func claimRevocations(now: Date, leaseUntil: Date, limit: Int) async throws -> [RevocationJob]
    /// Records a batch in one transaction: a `done` revocation (Apple accepted) is removed; a `retry` is released with
    /// one more attempt, its next due time and its error.
    func completeRevocations(_ results: [JobResult<RevocationJob, Void>], at now: Date) async throws
    /// How many revocations wait for Apple, and when the oldest one's account was deleted.
    func revocationBacklog() async throws -> (count: Int, oldestDeletion: Date?)
}
