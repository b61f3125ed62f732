public import Storage

/// The database `serve` keeps everything in (`ORCHARD_DATABASE_URL`, `ORCHARD_DATABASE_POOL_SIZE`,
/// `ORCHARD_DATABASE_CA_FILE`), and whether replicas answer session checks from memory (`ORCHARD_SESSION_CACHE`).
public struct DatabaseConfiguration: Sendable {
    /// `ORCHARD_DATABASE_URL`: `sqlite:PATH` or `postgres://…`.
    public var url: DatabaseURL = .sqlite(path: "orchard.sqlite")
    /// `ORCHARD_DATABASE_POOL_SIZE`: connections per replica (PostgreSQL).
    public var poolSize = 10
    /// `ORCHARD_DATABASE_CA_FILE`: the CA certificates for TLS to PostgreSQL.
    public var caFile: String?
    /// `ORCHARD_SESSION_CACHE`: whether `serve` answers session checks from memory.
    public var sessionCache = true
    /// `ORCHARD_DATABASE_POOLER`: whether `url` goes through a transaction-pooling proxy (PostgreSQL).
    public var pooler = DatabasePooler.none
    /// `ORCHARD_DATABASE_LISTEN_URL`: where the replicas' listener connects (PostgreSQL; default `url`), never through a
    /// transaction-pooling proxy.
    public var listenURL: String?

    /// The defaults.
    public init() {}

    /// Reads the database's settings.
    /// - Throws: ``ConfigurationError`` naming the first setting that is wrong.
    public init(reader settings: SettingsReader) throws(ConfigurationError) {
        if let text = settings.text("ORCHARD_DATABASE_URL", secret: true) {
            do {
                url = try DatabaseURL(parsing: text)
            } catch {
                throw ConfigurationError(setting: "ORCHARD_DATABASE_URL", problem: error.reason)
            }
        }
        poolSize = try settings.integer("ORCHARD_DATABASE_POOL_SIZE", in: 1...1000) ?? poolSize
        caFile = settings.text("ORCHARD_DATABASE_CA_FILE")
        switch settings.text("ORCHARD_SESSION_CACHE")?.lowercased() {
        case nil, "on": sessionCache = true
        case "off": sessionCache = false
        default: throw ConfigurationError(setting: "ORCHARD_SESSION_CACHE", problem: "must be on or off")
        }
        if let text = settings.text("ORCHARD_DATABASE_POOLER") {
            guard let value = DatabasePooler(rawValue: text.lowercased()) else {
                throw ConfigurationError(setting: "ORCHARD_DATABASE_POOLER", problem: "must be none or transaction")
            }
            pooler = value
        }
        if let text = settings.text("ORCHARD_DATABASE_LISTEN_URL", secret: true) {
            guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") else {
                throw ConfigurationError(setting: "ORCHARD_DATABASE_LISTEN_URL", problem: "must be a postgres:// URL")
            }
            listenURL = text
        }
        if case .postgres = url, pooler == .transaction, listenURL == nil {
            throw ConfigurationError(
                setting: "ORCHARD_DATABASE_LISTEN_URL",
                problem: """
                    is required with ORCHARD_DATABASE_POOLER=transaction: the replicas' listener must reach PostgreSQL                     directly or through a session-pooling proxy (a transaction-pooling one drops LISTEN)
                    """
            )
        }
    }
}
