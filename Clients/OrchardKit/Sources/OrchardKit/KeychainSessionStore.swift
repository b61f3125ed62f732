#if canImport(Security)
public import Foundation
import Security

/// A session kept in the Keychain: a generic password readable after the device's first unlock, on this device only
/// (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`: never in backups, never synced to other devices).
///
/// Before the device's first unlock after a restart, ``load()`` throws (`errSecInteractionNotAllowed`), and so does
/// ``OrchardClient/init(baseURL:store:urlSession:credentialStates:)``: create the client when the app is launched
/// into the foreground, not from a background launch before the first unlock.
public struct KeychainSessionStore: SessionStore {
    /// The Keychain service the item is filed under.
    public let service: String
    /// The item's account name.
    public let account: String

    /// Creates a store filed under `service` (default: the app's bundle identifier plus `.orchard`).
    public init(service: String = (Bundle.main.bundleIdentifier ?? "OrchardKit") + ".orchard", account: String = "session") {
        self.service = service
        self.account = account
    }

    /// The Keychain refused an operation, with its `OSStatus`.
    public struct KeychainError: Error, Sendable, Hashable {
        /// The status the Keychain answered.
        public let status: OSStatus
    }

    private var query: [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            // macOS: the iOS-style keychain, where kSecAttrAccessible applies (it needs a signed app with the keychain
            // entitlement); the other platforms always use it.
            kSecUseDataProtectionKeychain as String: true,
        ]
    }

    public func load() throws -> StoredSession? {
        var query = self.query
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = item as? Data else { throw KeychainError(status: status) }
        return try OrchardJSON.decoder.decode(StoredSession.self, from: data)
    }

    public func save(_ session: StoredSession) throws {
        let data = try OrchardJSON.encoder.encode(session)
        let attributes: [String: Any] = [
            kSecValueData as String: data,
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        var status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(query.merging(attributes) { $1 } as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw KeychainError(status: status) }
    }

    public func remove() throws {
        let status = SecItemDelete(query as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError(status: status) }
    }
}
#endif
