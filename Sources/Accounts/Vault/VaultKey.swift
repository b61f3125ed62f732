public import Crypto
public import Foundation

/// One key of the vault: an id that travels with every ciphertext it seals, and 32 bytes of AES-256 key material.
public struct VaultKey: Sendable {
    /// The key's id, written in front of every value it seals so that older keys can still open them after rotation.
    public let id: String
    /// The AES-256-GCM key.
    public let key: SymmetricKey

    /// Creates a key from its id and raw key material (32 bytes).
    ///
    /// - Throws: ``VaultError`` when the id is empty or holds a `:` or `,`, or the key is not 32 bytes.
    public init(id: String, keyBytes: some ContiguousBytes) throws(VaultError) {
        guard !id.isEmpty, !id.contains(":"), !id.contains(","), !id.contains(where: \.isWhitespace) else {
            throw VaultError.invalidKeySpecification("a key id must be non-empty without ':', ',' or spaces")
        }
        let key = SymmetricKey(data: keyBytes)
        guard key.bitCount == 256 else {
            throw VaultError.invalidKeySpecification("key '\(id)' must be 32 bytes, not \(key.bitCount / 8)")
        }
        self.id = id
        self.key = key
    }

    /// Parses `ORCHARD_VAULT_KEYS`: `ID:BASE64_OF_32_BYTES`, comma-separated; the first encrypts, all decrypt.
    ///
    /// - Throws: ``VaultError`` naming the entry that is wrong (never echoing key material).
    public static func parseList(_ text: String) throws(VaultError) -> [VaultKey] {
        let entries = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !entries.isEmpty else { throw VaultError.invalidKeySpecification("no key given (expected ID:BASE64_OF_32_BYTES)") }
        var keys: [VaultKey] = []
        for (index, entry) in entries.enumerated() {
            guard let colon = entry.firstIndex(of: ":") else {
                throw VaultError.invalidKeySpecification("entry \(index + 1) is not ID:BASE64_OF_32_BYTES")
            }
            let id = String(entry[..<colon])
            guard let bytes = Data(base64Encoded: String(entry[entry.index(after: colon)...])) else {
                throw VaultError.invalidKeySpecification("key '\(id)' is not valid base64")
            }
            guard !keys.contains(where: { $0.id == id }) else {
                throw VaultError.invalidKeySpecification("key id '\(id)' appears twice")
            }
            keys.append(try VaultKey(id: id, keyBytes: bytes))
        }
        return keys
    }

    /// Makes a fresh random key (for `orchard demo` and tests).
    public static func generate(id: String) -> VaultKey {
        // A fresh 256-bit key always satisfies the checks above.
        // swift-format-ignore: NeverUseForceTry
        try! VaultKey(id: id, keyBytes: SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) })
    }

    /// The key written as `ORCHARD_VAULT_KEYS` expects it: `ID:BASE64`.
    public var specification: String {
        "\(id):\(key.withUnsafeBytes { Data($0).base64EncodedString() })"
    }
}
