public import Accounts
import SQLKit

extension SQLAccountStore: VaultStore {
    /// Up to `limit` rows of `table` after `key`, in key order, with their sealed values.
    public func sealedRows(in table: VaultTable, after key: String?, limit: Int) async throws -> [SealedRow] {
        let columns = table.sealedColumns + (table == .accounts ? ["subject_hash", "email_hash"] : [])
        let keyColumn = SQLIdentifier(table.keyColumn)
        let select = """
            SELECT \(table.keyColumn), \(columns.joined(separator: ", ")) FROM \(table.rawValue)
            """
        let rows: [any SQLRow]
        if let key {
            rows = try await database.read(
                "\(unsafeRaw: select) WHERE \(keyColumn) > \(bind: key) ORDER BY \(keyColumn) LIMIT \(unsafeRaw: String(limit))"
            )
        } else {
            rows = try await database.read("\(unsafeRaw: select) ORDER BY \(keyColumn) LIMIT \(unsafeRaw: String(limit))")
        }
        return try rows.map { row in
            var values: [String: String] = [:]
            for column in table.sealedColumns where try !row.decodeNil(column: column) {
                values[column] = try row.decode(column: column, as: String.self)
            }
            let subjectHash = table == .accounts ? try row.decode(column: "subject_hash", as: String.self) : nil
            let emailHash = table == .accounts ? try row.decode(column: "email_hash", as: String?.self) : nil
            return SealedRow(
                key: try row.decode(column: table.keyColumn, as: String.self),
                values: values,
                subjectHash: subjectHash,
                emailHash: emailHash
            )
        }
    }

    /// Rewrites one row's sealed values (and lookup hash) if it still holds `row`'s, in its own transaction.
    public func replaceSealed(
        in table: VaultTable,
        row: SealedRow,
        with values: [String: String],
        subjectHash: String?,
        emailHash: String?
    ) async throws -> Bool {
        let columns = row.values.keys.sorted()
        guard !columns.isEmpty else { return true }
        var sets: [any SQLExpression] = columns.map { column in
            SQLBinaryExpression(SQLIdentifier(column), .equal, SQLBind(values[column] ?? ""))
        }
        var conditions: [any SQLExpression] = [SQLBinaryExpression(SQLIdentifier(table.keyColumn), .equal, SQLBind(row.key))]
        conditions += columns.map { column in SQLBinaryExpression(SQLIdentifier(column), .equal, SQLBind(row.values[column] ?? "")) }
        if table == .accounts, let subjectHash, let old = row.subjectHash {
            sets.append(SQLBinaryExpression(SQLIdentifier("subject_hash"), .equal, SQLBind(subjectHash)))
            conditions.append(SQLBinaryExpression(SQLIdentifier("subject_hash"), .equal, SQLBind(old)))
        }
        if table == .accounts {
            // The email's hash follows the email just resealed (or goes with it).
            sets.append(SQLBinaryExpression(SQLIdentifier("email_hash"), .equal, SQLBind(emailHash)))
        }
        let keyColumn = table.keyColumn
        let assignments = SQLList(sets)
        let matches = SQLList(conditions, separator: SQLRaw(" AND "))
        return try await database.transaction { db in
            let updated = try await db.raw(
                """
                UPDATE \(unsafeRaw: table.rawValue) SET \(assignments) WHERE \(matches)
                RETURNING \(unsafeRaw: keyColumn)
                """
            ).all()
            return !updated.isEmpty
        }
    }
}
