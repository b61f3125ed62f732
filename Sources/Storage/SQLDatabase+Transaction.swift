import SQLKit

extension SQLDatabase {
    /// Runs `body` between `begin` and `COMMIT` on this database, which must be a single connection; rolls back and
    /// rethrows when `body` or the commit throws. Both backends' `transaction(_:)` use it.
    func inTransaction<T>(begin: String, _ body: (any SQLDatabase) async throws -> T) async throws -> T {
        try await raw(SQLQueryString(begin)).run()
        do {
            let result = try await body(self)
            try await raw("COMMIT").run()
            return result
        } catch {
            try? await raw("ROLLBACK").run()
            throw error
        }
    }
}
