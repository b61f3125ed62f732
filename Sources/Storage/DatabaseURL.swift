import AppleID

/// Where the database is (`ORCHARD_DATABASE_URL`): `sqlite:PATH` or `postgres://USER:PASS@HOST:PORT/DB`. It describes
/// itself with a PostgreSQL URL's credentials redacted.
public enum DatabaseURL: Sendable, Equatable, CustomStringConvertible {
    /// An embedded SQLite file.
    case sqlite(path: String)
    /// A PostgreSQL server (the URL as given).
    case postgres(url: String)

    /// `sqlite:PATH`, or the PostgreSQL URL with its userinfo and query shown as `<redacted>`.
    public var description: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let url): URLRedaction.redactingCredentials(url)
        }
    }

    /// Parses the setting.
    ///
    /// - Throws: a message naming what is wrong (without echoing a password).
    public init(parsing text: String) throws(DatabaseURLError) {
        if text.hasPrefix("sqlite:") {
            var path = String(text.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path.removeFirst(2) }
            guard !path.isEmpty else { throw DatabaseURLError(reason: "sqlite: needs a file path, e.g. sqlite:orchard.sqlite") }
            self = .sqlite(path: path)
        } else if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            self = .postgres(url: text)
        } else {
            throw DatabaseURLError(reason: "must start with sqlite: or postgres://")
        }
    }
}

/// Why `ORCHARD_DATABASE_URL` was refused.
public struct DatabaseURLError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public let reason: String
    /// The reason.
    public var description: String { reason }
}
