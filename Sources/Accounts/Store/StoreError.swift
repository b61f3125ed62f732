/// A storage fault the domain must tell apart from a bug.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: Sendable, Equatable {
        case unavailable
        case conflict
    }

    private let code: Code
    /// What happened, without any personal data.
    public let reason: String

    private init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// The database could not be reached or refused to work (`storage_unavailable`).
    public static func unavailable(_ reason: String) -> StoreError { StoreError(.unavailable, reason) }
    /// A uniqueness rule was broken by a concurrent writer.
    public static let conflict = StoreError(.conflict, "a concurrent write created the same row")

    /// Whether two errors are of the same kind.
    public static func == (lhs: StoreError, rhs: StoreError) -> Bool { lhs.code == rhs.code }

    /// The reason.
    public var description: String { reason }
}
