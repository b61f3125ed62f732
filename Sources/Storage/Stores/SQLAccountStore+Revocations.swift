public import Accounts
import AppleID
public import Foundation
import SQLKit

extension SQLAccountStore: RevocationOutbox {
    /// The columns a ``RevocationJob`` is read from.
    static let revocationColumns = "id, client_id, sealed_token, token_type_hint, attempts, next_attempt_at, lease_until, last_error, created_at"

    /// Claims due, unheld revocations.
    public func claimRevocations(now: Date, leaseUntil: Date, limit: Int) async throws -> [RevocationJob] {
        try await claim(.revocations, now: now, leaseUntil: leaseUntil, limit: limit, returning: Self.revocationColumns, as: Self.revocation(from:))
    }

    /// How many revocations wait for Apple, and the oldest one's deletion (the table is the backlog: accepted ones go).
    public func revocationBacklog() async throws -> (count: Int, oldestDeletion: Date?) {
        let row = try await database.read("SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM revocations").first
        return (try row?.decode(column: "n", as: Int.self) ?? 0, try row?.date("oldest"))
    }

    /// Records a batch: accepted revocations are removed (and the deletion made final in the files), the others
    /// released with one more attempt. A `failed` one (never given up: Apple must accept in the end) keeps its lease and
    /// its error, and is tried again once the lease runs out.
    public func completeRevocations(_ results: [JobResult<RevocationJob, Void>], at now: Date) async throws {
        let accepted = results.filter(\.outcome.isDone).map(\.job.id)
        try await database.transaction { db in
            if !accepted.isEmpty {
                try await db.raw("DELETE FROM revocations WHERE id IN (\(binds: accepted))").run()
            }
            for result in results {
                switch result.outcome {
                case .done(_):
                    continue
                case .retry(let next, let error):
                    try await db.raw(
                        """
                        UPDATE revocations SET attempts = \(bind: result.job.attempts + 1), next_attempt_at = \(bind: next.milliseconds),
                            lease_until = NULL, last_error = \(bind: error)
                        WHERE id = \(bind: result.job.id)
                        """
                    ).run()
                case .failed(let error):
                    try await db.raw(
                        """
                        UPDATE revocations SET attempts = \(bind: result.job.attempts + 1), last_error = \(bind: error)
                        WHERE id = \(bind: result.job.id)
                        """
                    ).run()
                }
            }
        }
        if !accepted.isEmpty {
            try await database.purgeDeletedData()
        }
    }

    /// Revocations not yet accepted.
    public func pendingRevocations(limit: Int) async throws -> [RevocationJob] {
        try await database.read(
            "SELECT \(unsafeRaw: Self.revocationColumns) FROM revocations ORDER BY created_at LIMIT \(bind: limit)"
        ).map(Self.revocation(from:))
    }

    /// A revocation from its row.
    static func revocation(from row: any SQLRow) throws -> RevocationJob {
        RevocationJob(
            id: try row.string("id"),
            clientID: try row.string("client_id"),
            sealedToken: try row.string("sealed_token"),
            hint: TokenTypeHint(rawValue: try row.string("token_type_hint")) ?? .refreshToken,
            attempts: try row.decode(column: "attempts", as: Int.self),
            nextAttemptAt: try row.date("next_attempt_at") ?? Date(timeIntervalSince1970: 0),
            leaseUntil: try row.date("lease_until"),
            lastError: try row.optionalString("last_error"),
            createdAt: try row.date("created_at") ?? Date(timeIntervalSince1970: 0)
        )
    }
}
