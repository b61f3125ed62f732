import AppleID
import Foundation

/// An account's sessions, one per device: listing them, ending one from another device, ending all others.
extension AccountDesk {
    /// The live sessions of the account behind `token`, newest first, with the asking one marked ``DeviceSession/current``.
    public func deviceSessions(token: String) async throws(AccountsError) -> [DeviceSession] {
        let (caller, account) = try await liveSession(token: token)
        return try await deviceSessions(accountID: account.id, currentTokenHash: caller.tokenHash)
    }

    /// Everything the account page shows for the session behind `token`, from one session lookup: the account, its
    /// sessions and its last `activity` events.
    public func overview(token: String, activity: Int) async throws(AccountsError) -> AccountOverview {
        let (caller, account) = try await liveSession(token: token)
        recordSeen(lastSeenAt: caller.lastSeenAt, tokenHash: caller.tokenHash)
        return AccountOverview(
            account: try sealing.view(of: account),
            sessions: try await deviceSessions(accountID: account.id, currentTokenHash: caller.tokenHash),
            activity: try await history(accountID: account.id, before: nil, limit: activity).events
        )
    }

    /// The account's live sessions, newest first; the one whose token hashes to `currentTokenHash` is marked current.
    func deviceSessions(accountID: String, currentTokenHash: String?) async throws(AccountsError) -> [DeviceSession] {
        let sessions = try await storing { try await store.liveSessions(accountID: accountID, now: clock.now()) }
        var shown: [DeviceSession] = []
        for session in sessions {
            shown.append(
                DeviceSession(
                    id: session.id,
                    createdAt: session.createdAt,
                    expiresAt: session.expiresAt,
                    lastSeenAt: session.lastSeenAt,
                    device: try openDeviceLabel(session.sealedDevice, context: SealingContext.session(session.id), of: "session \(session.id)"),
                    current: session.tokenHash == currentTokenHash
                )
            )
        }
        return shown
    }

    /// Ends the session `id` of the account behind `token`, as a sign-out on that device would; `true` when it was the
    /// asking session itself (a sign-out in every respect).
    ///
    /// - Throws: `not_found` when the account has no live session with that id (another account's is no different).
    @discardableResult
    public func endSession(token: String, id: String) async throws(AccountsError) -> Bool {
        let (caller, account) = try await liveSession(token: token)
        guard OpaqueID.isSessionID(id) else { throw AccountsError(.notFound, "no live session with that id") }
        // Ending one's own session from the list is a sign-out here; any other is a sign-out from another device.
        let cause: SignOutCause = id == caller.id ? .user : .otherDevice
        let ended = try await storing {
            try await store.endSession(id: id, accountID: account.id, reason: .signedOut, cause: cause, at: clock.now())
        }
        guard ended else { throw AccountsError(.notFound, "no live session with that id") }
        return id == caller.id
    }

    /// Ends every other live session of the account behind `token`; the asking one stays. Returns how many ended.
    public func endOtherSessions(token: String) async throws(AccountsError) -> Int {
        let (caller, account) = try await liveSession(token: token)
        return try await storing {
            try await store.endOtherSessions(
                accountID: account.id,
                keepingTokenHash: caller.tokenHash,
                reason: .signedOut,
                cause: .otherDevice,
                at: clock.now()
            )
        }
    }

    /// Records the session check in the session's `last_seen_at`, once a minute at most: the minute of `now`, when the
    /// session shows an earlier one. The store writes it beside the answer, never before it: best effort, since the
    /// check's answer is right without it, and a check answered from memory during an outage must not wait on the
    /// database.
    ///
    /// Takes the two fields it reads, not the record: a session check passes them from the memory's shared storage,
    /// and passing the record copied all of its strings.
    func recordSeen(lastSeenAt: Date?, tokenHash: String) {
        let now = clock.now()
        let minute = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 60).rounded(.down) * 60)
        if let seen = lastSeenAt, seen >= minute { return }
        store.noteSeen(tokenHash: tokenHash, at: minute)
    }

    /// A device label (of a session or a history event: `record` names it in the error), opened.
    func openDeviceLabel(_ sealed: String?, context: String, of record: String) throws(AccountsError) -> String? {
        guard let sealed else { return nil }
        do {
            return try vault.open(sealed, context: context).value
        } catch {
            throw AccountsError(.storageUnavailable, "a device label of \(record) cannot be opened with the configured vault keys")
        }
    }
}

/// What the account page shows: the account, its live sessions and its latest events.
public struct AccountOverview: Sendable {
    /// The account.
    public var account: AccountView
    /// Its live sessions, newest first, the asking one marked current.
    public var sessions: [DeviceSession]
    /// Its latest events, newest first.
    public var activity: [HistoryEntry]
}
