public import AppleID
import Crypto
import Foundation

/// Seals personal data and Apple's tokens with AES-256-GCM under the vault keys, and derives the keyed hash that finds
/// an account by its Apple subject without storing the subject in the clear.
///
/// A sealed value is `v1.KEY_ID.BASE64(nonce‖ciphertext‖tag)`; the key id lets older keys open it after rotation. Each
/// value is bound to its record and field through the additional authenticated data, so a ciphertext copied into
/// another row does not open.
public struct TokenVault: Sendable {
    private let keys: [VaultKey]
    private let lookupKeys: [SymmetricKey]

    /// Creates a vault; the first key seals, every key opens.
    ///
    /// - Precondition: `keys` is not empty (configuration validation guarantees it).
    public init(keys: [VaultKey]) {
        precondition(!keys.isEmpty, "the vault needs at least one key")
        self.keys = keys
        self.lookupKeys = keys.map { key in
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: key.key,
                info: Data("orchard subject lookup v1".utf8),
                outputByteCount: 32
            )
        }
    }

    /// The id of the key that seals new values.
    public var currentKeyID: String { keys[0].id }

    /// Every configured key id, the current one first.
    public var keyIDs: [String] { keys.map(\.id) }

    /// Seals `plaintext` for one field of one record.
    public func seal(_ plaintext: String, context: String) throws -> String {
        let key = keys[0]
        let box = try AES.GCM.seal(Data(plaintext.utf8), using: key.key, authenticating: Data(context.utf8))
        guard let combined = box.combined else { throw VaultError.corrupt }
        return "v1.\(key.id).\(combined.base64EncodedString())"
    }

    /// Seals a redacted secret.
    public func seal(_ secret: Redacted<String>, context: String) throws -> String {
        try seal(secret.value, context: context)
    }

    /// Opens a value sealed by ``seal(_:context:)-(String,_)`` for the same context, under whichever key sealed it.
    public func open(_ sealed: String, context: String) throws -> Redacted<String> {
        guard let (id, body) = Self.parts(of: sealed), let data = Data(base64Encoded: String(body)) else {
            throw VaultError.corrupt
        }
        guard let key = keys.first(where: { $0.id == id }) else { throw VaultError.unknownKey(String(id)) }
        do {
            let box = try AES.GCM.SealedBox(combined: data)
            let plaintext = try AES.GCM.open(box, using: key.key, authenticating: Data(context.utf8))
            return Redacted(String(decoding: plaintext, as: UTF8.self))
        } catch {
            throw VaultError.corrupt
        }
    }

    /// The id of the key that sealed a value, or `nil` when it is not in the vault's format.
    public func keyID(of sealed: String) -> String? {
        Self.parts(of: sealed).map { String($0.keyID) }
    }

    /// What every sealed value starts with: the format's version and the dot before the key id.
    private static let versionPrefix = Array("v1.".utf8)

    /// The key id and the base64 text of a value in the vault's format (`v1.KEY_ID.BASE64`), or `nil`.
    ///
    /// Cut on the UTF-8 bytes at the first two dots, not split into an array of parts: the session check opens two or
    /// three values (`Benchmarks/run`'s session check guards this).
    /// Being bytes, a dot followed by a combining mark is still a dot here.
    private static func parts(of sealed: String) -> (keyID: Substring, body: Substring)? {
        let utf8 = sealed.utf8
        guard utf8.starts(with: versionPrefix) else { return nil }
        let idStart = utf8.index(utf8.startIndex, offsetBy: versionPrefix.count)
        guard let idEnd = utf8[idStart...].firstIndex(of: UInt8(ascii: ".")) else { return nil }
        return (Substring(utf8[idStart..<idEnd]), Substring(utf8[utf8.index(after: idEnd)...]))
    }

    /// The keyed hash that finds an account by its Apple subject, under the current key.
    public func subjectHash(_ subject: Redacted<String>) -> String {
        Self.hash(subject.value, key: lookupKeys[0])
    }

    /// The subject's hash under every configured key, current first: a lookup matches rows hashed before a rotation.
    public func subjectHashCandidates(_ subject: Redacted<String>) -> [String] {
        lookupKeys.map { Self.hash(subject.value, key: $0) }
    }

    /// The keyed hash that finds an account by its email, letter case ignored, under the current key; apart from the
    /// subject's by a prefix, so that an email never matches a subject.
    public func emailHash(_ email: String) -> String {
        Self.hash("email:" + email.lowercased(), key: lookupKeys[0])
    }

    /// The email's hash under every configured key, current first.
    public func emailHashCandidates(_ email: String) -> [String] {
        lookupKeys.map { Self.hash("email:" + email.lowercased(), key: $0) }
    }

    private static func hash(_ value: String, key: SymmetricKey) -> String {
        HMAC<SHA256>.authenticationCode(for: Data(value.utf8), using: key).hexString
    }
}
