/// What the SQLite writer's group commit has done since the database was opened.
public struct SQLiteCommitStatistics: Sendable, Equatable {
    /// Commits (each one `BEGIN IMMEDIATE … COMMIT`, one fsync).
    public var groups = 0
    /// Transactions those commits held; `transactions / groups` is the average group size.
    public var transactions = 0
    /// Transactions waiting for the writer right now.
    public var queued = 0
}
