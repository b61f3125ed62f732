import Accounts
public import Logging

extension DatabaseURL {
    /// Opens the database this URL names.
    ///
    /// - Throws: ``Accounts/StoreError`` when it cannot be reached or is not supported by this build.
    public func open(
        poolSize: Int = 10,
        caFile: String? = nil,
        sessionCache: SessionCacheRole = .announcing,
        logger: Logger
    ) async throws -> any DatabaseClient {
        switch self {
        case .sqlite(let path):
            return try await SQLiteDatabaseClient.open(path: path, logger: logger)
        case .postgres(let url):
            return try PostgresDatabaseClient.open(url: url, poolSize: poolSize, caFile: caFile, sessionCache: sessionCache, logger: logger)
        }
    }
}
