public import Storage

/// A test database client around another, which hands what it does not watch straight to the wrapped one.
public protocol WrappingDatabaseClient: DatabaseClient {
    /// The wrapped client.
    var base: any DatabaseClient { get }
}

extension WrappingDatabaseClient {
    /// The wrapped database's dialect.
    public var flavor: DatabaseFlavor { base.flavor }

    /// The wrapped database's.
    public var withoutDeadline: any DatabaseClient { base.withoutDeadline }

    /// The wrapped database's.
    public func purgeDeletedData() async throws { try await base.purgeDeletedData() }

    /// The wrapped database's.
    public func close() async { await base.close() }
}
