import Accounts
import PostgresNIO

extension PostgresConnection {
    /// Throws ``Accounts/StoreError/unavailable(_:)`` when this connection is closed. A query written to a closed
    /// connection is never answered (postgres-nio's handler has left the channel, and the write fails unheard), so its
    /// caller would wait forever; the server closes connections itself (`pg_terminate_backend`, a restart), and the
    /// pool may hand one out before it has noticed.
    func ensureOpen() throws {
        if isClosed { throw StoreError.unavailable("PostgreSQL closed the connection") }
    }
}
