/// Where a statement outside a transaction runs: a `SELECT` on a reader connection, a `PRAGMA` alone on the writer, and
/// anything else as a one-statement write committed with the writer's group.
enum SQLiteStatementKind: Equatable {
    /// A query that only reads (`SELECT …`): a reader connection serves it, never waiting for the writer.
    case read
    /// A `PRAGMA` (for example `wal_checkpoint`): on the writer, outside any transaction.
    case pragma
    /// Anything else: a write, group-committed.
    case write

    /// Classifies a statement by its first keyword.
    init(sql: String) {
        let keyword = sql.drop(while: \.isWhitespace).prefix(6).uppercased()
        if keyword == "SELECT" {
            self = .read
        } else if keyword.hasPrefix("PRAGMA") {
            self = .pragma
        } else {
            self = .write
        }
    }
}
