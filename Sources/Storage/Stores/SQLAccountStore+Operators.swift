public import Accounts
public import Foundation
import SQLKit

/// Operators, their console logins and the audit log. Each request asks the database, so a removed operator is
/// refused by every replica at its next request.
extension SQLAccountStore: OperatorStore {
    /// Adds an operator unless the name is taken.
    public func insertOperator(name: String, tokenHash: String, at: Date) async throws -> Bool {
        try await database.withDatabase { db in
            !(try await db.raw(
                """
                INSERT INTO operators (name, token_hash, created_at) VALUES (\(bind: name), \(bind: tokenHash), \(bind: at.milliseconds))
                ON CONFLICT DO NOTHING
                RETURNING name
                """
            ).all()).isEmpty
        }
    }

    /// Every operator, by name.
    public func operators() async throws -> [OperatorRecord] {
        try await database.read("SELECT name, created_at FROM operators ORDER BY name").map { row in
            OperatorRecord(name: try row.string("name"), createdAt: try row.date("created_at") ?? Date(timeIntervalSince1970: 0))
        }
    }

    /// Removes the operator; its console logins go with it (`ON DELETE CASCADE`, and explicitly for safety).
    public func deleteOperator(name: String) async throws -> Bool {
        try await database.transaction { db in
            try await db.raw("DELETE FROM operator_logins WHERE operator = \(bind: name)").run()
            return !(try await db.raw("DELETE FROM operators WHERE name = \(bind: name) RETURNING name").all()).isEmpty
        }
    }

    /// The operator whose token hashes to `tokenHash`.
    public func operatorName(tokenHash: String) async throws -> String? {
        try await database.read("SELECT name FROM operators WHERE token_hash = \(bind: tokenHash)").first?.string("name")
    }

    /// Records a console login; expired ones are removed on the way.
    public func insertConsoleLogin(tokenHash: String, operatorName: String, expiresAt: Date, now: Date) async throws {
        try await database.transaction { db in
            try await db.raw("DELETE FROM operator_logins WHERE expires_at <= \(bind: now.milliseconds)").run()
            try await db.raw(
                """
                INSERT INTO operator_logins (token_hash, operator, expires_at)
                VALUES (\(bind: tokenHash), \(bind: operatorName), \(bind: expiresAt.milliseconds))
                """
            ).run()
        }
    }

    /// The operator of a live login whose operator still exists.
    public func consoleLogin(tokenHash: String, now: Date) async throws -> String? {
        try await database.read(
            """
            SELECT o.name AS name FROM operator_logins l JOIN operators o ON o.name = l.operator
            WHERE l.token_hash = \(bind: tokenHash) AND l.expires_at > \(bind: now.milliseconds)
            """
        ).first?.string("name")
    }

    /// Ends a console login.
    public func deleteConsoleLogin(tokenHash: String) async throws {
        try await database.withDatabase { db in
            try await db.raw("DELETE FROM operator_logins WHERE token_hash = \(bind: tokenHash)").run()
        }
    }

    /// Appends an audit entry.
    public func appendAudit(_ entry: AuditEntry) async throws {
        try await database.withDatabase { db in
            try await db.raw(
                """
                INSERT INTO operator_audit (id, at, operator, method, route, account_id, status)
                VALUES (\(bind: entry.id), \(bind: entry.at.milliseconds), \(bind: entry.operatorName), \(bind: entry.method),
                    \(bind: entry.route), \(bind: entry.accountID), \(bind: entry.status))
                """
            ).run()
        }
    }

    /// Completes an entry written before its request was acted on.
    public func completeAudit(id: String, status: Int, accountID: String?) async throws {
        try await database.withDatabase { db in
            try await db.raw(
                "UPDATE operator_audit SET status = \(bind: status), account_id = \(bind: accountID) WHERE id = \(bind: id)"
            ).run()
        }
    }

    /// Audit entries older than the entry `before`, newest first, through the `(at, id)` index.
    public func audit(before: String?, limit: Int) async throws -> [AuditEntry]? {
        var after: (at: Int64, id: String)?
        if let before {
            guard let row = try await database.read("SELECT at FROM operator_audit WHERE id = \(bind: before)").first else { return nil }
            after = (try row.decode(column: "at", as: Int64.self), before)
        }
        let condition: SQLQueryString = after.map { "WHERE (at < \(bind: $0.at) OR (at = \(bind: $0.at) AND id < \(bind: $0.id)))" } ?? ""
        return try await database.read(
            """
            SELECT id, at, operator, method, route, account_id, status FROM operator_audit \(condition)
            ORDER BY at DESC, id DESC LIMIT \(bind: limit)
            """
        ).map { row in
            AuditEntry(
                id: try row.string("id"),
                at: try row.date("at") ?? Date(timeIntervalSince1970: 0),
                operatorName: try row.string("operator"),
                method: try row.string("method"),
                route: try row.string("route"),
                accountID: try row.optionalString("account_id"),
                status: try row.decode(column: "status", as: Int.self)
            )
        }
    }
}
