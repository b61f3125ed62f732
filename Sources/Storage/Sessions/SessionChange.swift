public import Accounts
public import SQLKit

/// A transaction in which sessions may end or an account's shown fields may change: only ``SessionKeeper`` makes one,
/// once it has told the session memory (and, on PostgreSQL, every replica) which sessions or accounts the change
/// affects. The statements that end sessions are its methods and end nothing outside ``target``, so a change that ends
/// sessions without telling the memory does not compile (docs/layout.md, "Ending sessions").
public struct SessionChange: Sendable {
    /// The transaction: any other statement of the change runs on it.
    public let db: any SQLDatabase
    /// What the change affects, as the memory was told.
    public let target: SessionEndTarget

    init(db: any SQLDatabase, target: SessionEndTarget) {
        self.db = db
        self.target = target
    }

    /// Ends every live session of ``target`` (its sessions, or its accounts' sessions) with `reason`; returns the public
    /// ids of the sessions it ended.
    @discardableResult
    public func endSessions(reason: SessionEndReason, at milliseconds: Int64) async throws -> [String] {
        try await endSessions(matching: nil, reason: reason, at: milliseconds)
    }

    /// Ends every session of ``target`` that is live at `milliseconds` (not ended, not expired), with `reason`; returns
    /// the public ids of the sessions it ended.
    @discardableResult
    public func endLiveSessions(reason: SessionEndReason, at milliseconds: Int64) async throws -> [String] {
        try await endSessions(matching: nil, reason: reason, at: milliseconds, liveOnly: true)
    }

    /// Ends the live sessions among `tokenHashes` that ``target`` covers, with `reason`; returns the public ids of the
    /// sessions it ended.
    @discardableResult
    public func endSessions(tokenHashes: [String], reason: SessionEndReason, at milliseconds: Int64) async throws -> [String] {
        guard !tokenHashes.isEmpty else { return [] }
        return try await endSessions(matching: tokenHashes, reason: reason, at: milliseconds)
    }

    private func endSessions(
        matching tokenHashes: [String]?,
        reason: SessionEndReason,
        at milliseconds: Int64,
        liveOnly: Bool = false
    ) async throws -> [String] {
        let within: SQLQueryString
        switch target {
        case .sessions(let hashes): within = "token_hash IN (\(binds: hashes))"
        case .accounts(let ids): within = "account_id IN (\(binds: ids))"
        }
        let among: SQLQueryString = tokenHashes.map { " AND token_hash IN (\(binds: $0))" } ?? ""
        let live: SQLQueryString = liveOnly ? " AND expires_at > \(bind: milliseconds)" : ""
        return try await db.raw(
            """
            UPDATE sessions SET ended_at = \(bind: milliseconds), end_reason = \(bind: reason.rawValue)
            WHERE \(within)\(among)\(live) AND ended_at IS NULL
            RETURNING id
            """
        ).all().map { try $0.decode(column: "id", as: String.self) }
    }
}
