/// Why the vault refused a key or a ciphertext.
public struct VaultError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: Sendable, Equatable {
        case invalidKeySpecification
        case unknownKey
        case corrupt
    }

    private let code: Code
    /// A human-readable reason that never holds key material or plaintext.
    public let reason: String

    private init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// `ORCHARD_VAULT_KEYS` (or a key in it) is not well formed.
    public static func invalidKeySpecification(_ reason: String) -> VaultError { VaultError(.invalidKeySpecification, reason) }
    /// A ciphertext names a key id that is not configured (a retired key still in use).
    public static func unknownKey(_ id: String) -> VaultError { VaultError(.unknownKey, "no vault key with id '\(id)'") }
    /// A ciphertext failed authentication or is not in the vault's format.
    public static let corrupt = VaultError(.corrupt, "sealed value is corrupt or was sealed for another record")

    /// Whether two errors are of the same kind.
    public static func == (lhs: VaultError, rhs: VaultError) -> Bool { lhs.code == rhs.code }

    /// The reason.
    public var description: String { reason }
}
