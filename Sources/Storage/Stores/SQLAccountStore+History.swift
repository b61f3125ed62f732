public import Accounts
import Foundation
import SQLKit

/// Each account's history: written inside the transaction of the change it records, read a page at a time.
extension SQLAccountStore: HistoryStore {
    static let eventColumns = "id, account_id, type, reason, session_id, sealed_device, occurred_at"

    /// Up to `limit` of the account's events older than the event `before`, newest first.
    public func history(accountID: String, before: String?, limit: Int) async throws -> [HistoryEvent] {
        let older: SQLQueryString =
            before == nil
            ? ""
            : " AND (account_events.occurred_at < c.occurred_at OR (account_events.occurred_at = c.occurred_at AND account_events.id < c.id))"
        let from: SQLQueryString =
            before.map { cursor in
                """
                account_events, (SELECT occurred_at, id FROM account_events
                    WHERE id = \(bind: cursor) AND account_id = \(bind: accountID)) AS c
                """
            } ?? "account_events"
        return try await database.read(
            """
            SELECT \(unsafeRaw: Self.qualified(Self.eventColumns, table: "account_events")) FROM \(from)
            WHERE account_events.account_id = \(bind: accountID)\(older)
            ORDER BY account_events.occurred_at DESC, account_events.id DESC LIMIT \(bind: limit)
            """
        ).map(Self.event(from:))
    }

    /// `columns` read from `table`, each under its own name.
    static func qualified(_ columns: String, table: String) -> String {
        columns.split(separator: ",")
            .map { column in
                let name = column.trimmingCharacters(in: .whitespacesAndNewlines)
                return table + "." + name + " AS " + name
            }
            .joined(separator: ", ")
    }

    static func event(from row: any SQLRow) throws -> HistoryEvent {
        HistoryEvent(
            id: try row.string("id"),
            accountID: try row.string("account_id"),
            kind: HistoryEvent.Kind(rawValue: try row.string("type")) ?? .signedIn,
            occurredAt: try row.date("occurred_at") ?? Date(timeIntervalSince1970: 0),
            sessionID: try row.optionalString("session_id"),
            sealedDevice: try row.optionalString("sealed_device"),
            reason: try row.optionalString("reason")
        )
    }

    /// Adds events (inside the caller's transaction); an event whose id is taken is not added, which folds a day's
    /// repeated `apple_validation` (see ``HistoryEvent/validation(accountID:reason:at:)``).
    static func insertEvents(_ events: [HistoryEvent], on db: any SQLDatabase) async throws {
        guard !events.isEmpty else { return }
        let values = events.map { event -> SQLQueryString in
            """
            (\(bind: event.id), \(bind: event.accountID), \(bind: event.kind.rawValue), \(bind: event.reason),
                \(bind: event.sessionID), \(bind: event.sealedDevice), \(bind: event.occurredAt.milliseconds))
            """
        }.joined(separator: ", ")
        try await db.raw("INSERT INTO account_events (\(unsafeRaw: eventColumns)) VALUES \(values) ON CONFLICT (id) DO NOTHING").run()
    }

    /// Adds a `signed_out` event for each session in `sessionIDs` that `UPDATE … RETURNING` just ended (inside the
    /// caller's transaction). The event's id is the session's own random part, as a session ends only once.
    static func insertSignOuts(sessionIDs: [String], cause: SignOutCause, at: Date, on db: any SQLDatabase) async throws {
        guard !sessionIDs.isEmpty else { return }
        try await db.raw(
            """
            INSERT INTO account_events (\(unsafeRaw: eventColumns))
            SELECT \(unsafeRaw: HistoryEvent.signedOutIDSQL()), account_id, 'signed_out', CAST(\(bind: cause.rawValue) AS TEXT), id, NULL,
                CAST(\(bind: at.milliseconds) AS BIGINT)
            FROM sessions WHERE id IN (\(binds: sessionIDs))
            ON CONFLICT (id) DO NOTHING
            """
        ).run()
    }
}
