import AppleID
import Crypto
import Foundation
import Synchronization

/// The salted hash of a subject that audit and inbox records keep: SHA-256 of the installation's salt and the subject,
/// so an operator can show a given subject was deleted by hashing it again, and nothing else of the user is kept.
public final class AuditDigests: Sendable {
    private let store: any AccountChangeStore
    /// The salt once read: it never changes after the first migration, and every notification needs it.
    private let salt = Mutex<String?>(nil)

    /// Creates the hasher over the store that keeps the salt.
    public init(store: any AccountChangeStore) {
        self.store = store
    }

    /// The digest of `subject`, lowercase hex.
    func digest(_ subject: Redacted<String>) async throws -> String {
        let salt: String
        if let cached = self.salt.withLock({ $0 }) {
            salt = cached
        } else {
            salt = try await store.auditSalt()
            self.salt.withLock { $0 = salt }
        }
        return SHA256.hash(data: Data("\(salt):\(subject.value)".utf8)).hexString
    }
}
