public import Foundation

/// The outcome of trying to consume an issued nonce.
public enum NonceConsumption: Sendable, Equatable {
    /// It was issued, unexpired and unused; it is now used.
    case consumed
    /// It was used before.
    case alreadyConsumed
    /// It was never issued, or its lifetime is over.
    case unknownOrExpired
}

/// Where accounts, sessions and nonces live; implemented by the Storage module over SQL.
///
/// Each method is atomic on its own. Implementations throw ``StoreError`` for faults the domain must tell apart.
/// Finding an account by its subject: what a notification needs to know whom it is about.
public protocol AccountLookup: Sendable {
    /// The account whose subject hash is one of `subjectHashes`.
    func account(subjectHashes: [String]) async throws -> AccountRecord?
    /// Every account whose subject hash is one of `subjectHashes`, in one read.
    func accounts(subjectHashes: [String]) async throws -> [AccountRecord]
}

public protocol AccountStore: AccountLookup, HistoryStore {
    /// Stores an issued nonce by its hash.
    func insertNonce(hash: String, expiresAt: Date) async throws
    /// Marks the first of `hashes` that was issued as used, if it is unexpired and unused at `now`. One read decides
    /// first when nothing can be consumed, so a forged or replayed token is refused without a write.
    func consumeNonce(hashes: [String], now: Date) async throws -> NonceConsumption
    /// The account of a pending import (app transfer, receiving side) found by its transfer identifier's hash.
    func pendingImport(subjectHashes: [String]) async throws -> AccountRecord?
    /// The account with this id.
    func account(id: String) async throws -> AccountRecord?
    /// Accounts ordered by id, after `afterID` when given.
    func accounts(limit: Int, afterID: String?) async throws -> [AccountRecord]
    /// Writes a sign-in in one transaction (see ``SignInRecord``): `false` when the account to update no longer exists
    /// (deleted meanwhile), and then only its ``SignInRecord/revocationIfGone`` is written.
    /// - Throws: ``StoreError/conflict`` when the account is new and another with the same subject hash appeared
    ///   meanwhile.
    func recordSignIn(_ signIn: SignInRecord) async throws -> Bool
    /// The session with this token hash, with its account's shown fields unless it was deleted, for a session check:
    /// the session memory may answer (never for a session that has ended; only the session check and the access token
    /// ask this way, every request that writes reads the database).
    func checkSession(tokenHash: String) async throws -> SessionWithAccount?
    /// The session with this token hash as the session memory remembers it, answered without suspending: `nil` when the
    /// memory does not answer for it now (``checkSession(tokenHash:)`` then reads). A session check asks this first: a
    /// check answered here makes no asynchronous call through the store, after which Swift would switch back to the
    /// caller's executor (on serve's event loops, a trip through the loop's task queue).
    func rememberedSession(tokenHash: String) -> SessionWithAccount?
    /// The session with this token hash, with its account's shown fields unless it was deleted, as the database has it.
    func session(tokenHash: String) async throws -> SessionWithAccount?
    /// Ends a live session and records its `signed_out` event with `cause`; `false` when there was no live session with
    /// that hash.
    func endSession(tokenHash: String, reason: SessionEndReason, cause: SignOutCause, at: Date) async throws -> Bool
    /// A session check at `minute`, for the session's `last_seen_at`: written beside the answers (never before one),
    /// once a minute per session at most; the only write a session check causes.
    func noteSeen(tokenHash: String, at minute: Date)
    /// The account's sessions that are live at `now` (not ended, not expired), newest first.
    func liveSessions(accountID: String, now: Date) async throws -> [SessionRecord]
    /// Ends the account's live session with this public id; `false` when the account has no live session with it.
    func endSession(id: String, accountID: String, reason: SessionEndReason, cause: SignOutCause, at: Date) async throws -> Bool
    /// Ends every live session of the account except the one with `keepingTokenHash` (every one when `nil`), each with
    /// its `signed_out` event of `cause` (`other_device`, `operator`); returns how many ended.
    func endOtherSessions(accountID: String, keepingTokenHash: String?, reason: SessionEndReason, cause: SignOutCause, at: Date) async throws -> Int
    /// Runs a trivial query; throws what kept the database from answering it.
    func checkReachable() async throws
}
