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
    /// `ORCHARD_SESSION_CACHE`: whether `serve` answers session checks from memory on PostgreSQL.
    public var sessionCache = true

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
    }
}
