public import Foundation

/// What OrchardKit keeps between launches: the session token and the account it belongs to.
public struct StoredSession: Sendable, Hashable, Codable {
    /// The bearer token of the session.
    public var token: String
    /// When Orchard ends the session by itself.
    public var expiresAt: Date
    /// The account, as Orchard last described it.
    public var account: Account

    /// Creates a stored session.
    public init(token: String, expiresAt: Date, account: Account) {
        self.token = token
        self.expiresAt = expiresAt
        self.account = account
    }
}

/// Where the session is kept: ``KeychainSessionStore`` on Apple platforms, ``FileSessionStore`` elsewhere,
/// ``InMemorySessionStore`` in tests.
public protocol SessionStore: Sendable {
    /// The stored session, if any.
    func load() throws -> StoredSession?
    /// Stores `session`, replacing any other.
    func save(_ session: StoredSession) throws
    /// Removes the stored session; removing nothing is not an error.
    func remove() throws
}

/// A session kept in memory only: for tests and previews.
public final class InMemorySessionStore: SessionStore, @unchecked Sendable {
    private let lock = NSLock()
    private var session: StoredSession?

    /// Creates a store holding `session`.
    public init(_ session: StoredSession? = nil) {
        self.session = session
    }

    public func load() throws -> StoredSession? { lock.withLock { session } }
    public func save(_ session: StoredSession) throws { lock.withLock { self.session = session } }
    public func remove() throws { lock.withLock { session = nil } }
}

enum OrchardJSON {
    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}
