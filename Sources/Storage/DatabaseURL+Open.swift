import Accounts
public import Logging

extension DatabaseURL {
    /// Opens the database this URL names.
    ///
    /// - Throws: ``Accounts/StoreError`` when it cannot be reached or is not supported by this build.
    public func open(logger: Logger) async throws -> any DatabaseClient {
        switch self {
        case .sqlite(let path):
            return try await SQLiteDatabaseClient.open(path: path, logger: logger)
        case .postgres:
            throw StoreError.unavailable("PostgreSQL is not supported by this build yet; use sqlite:PATH")
        }
    }
}
