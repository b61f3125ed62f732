import SQLKit
import Synchronization

extension SQLDatabase {
    /// The first row `query` returns, if any: the same statement as SQLKit's `raw(query).first()`, run by the
    /// database's own `execute`. SQLKit's builder layers are async functions of a module that runs them on the generic
    /// executor, so each is a switch of executor and back; the session check uses this instead.
    func firstRow(_ query: SQLQueryString) async throws -> (any SQLRow)? {
        let first = Mutex<(any SQLRow)?>(nil)
        try await execute(sql: query) { row in
            first.withLock { if $0 == nil { $0 = row } }
        }
        return first.withLock { $0 }
    }
}
