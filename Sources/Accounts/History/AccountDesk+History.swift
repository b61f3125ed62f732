import AppleID
import Foundation

extension AccountDesk {
    /// The most events a page holds, and how many a page holds unless asked otherwise.
    public static let historyPageLimit = 1...100
    /// A page's size unless asked otherwise.
    public static let historyDefaultPageSize = 50

    /// A page of the caller's account's history, newest first, older than the event `before` (the previous page's
    /// `next`).
    /// - Throws: `session_invalid`/`session_revoked` for a session that is not live; `invalid_request` for a limit out of
    ///   range or a cursor that is not an event id.
    public func history(token: String, before: String?, limit: Int) async throws(AccountsError) -> HistoryPage {
        let (_, account) = try await liveSession(token: token)
        return try await history(accountID: account.id, before: before, limit: limit)
    }

    /// A page of an account's history, for an operator (`orchard accounts history`).
    public func history(accountID: String, before: String?, limit: Int) async throws(AccountsError) -> HistoryPage {
        guard Self.historyPageLimit.contains(limit) else { throw AccountsError(.invalidRequest, "limit must be 1 to 100") }
        if let before, !OpaqueID.isEventID(before) { throw AccountsError(.invalidRequest, "before must be the next cursor of a page") }
        // One more than asked tells whether an older page exists.
        let events = try await storing { try await store.history(accountID: accountID, before: before, limit: limit + 1) }
        var entries: [HistoryEntry] = []
        for event in events.prefix(limit) {
            entries.append(
                HistoryEntry(
                    id: event.id,
                    kind: event.kind,
                    occurredAt: event.occurredAt,
                    sessionID: event.sessionID,
                    device: try openDeviceLabel(event.sealedDevice, context: SealingContext.historyEvent(event.id), of: "event \(event.id)"),
                    reason: event.reason
                )
            )
        }
        return HistoryPage(events: entries, next: events.count > limit ? entries.last?.id : nil)
    }
}
