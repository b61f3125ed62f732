package import Crypto

extension SHA256 {
    /// The digest of `text`'s UTF-8 bytes, hashed where the string keeps them: `hash(data: Data(text.utf8))` first
    /// copies them into a new `Data`. Every request that carries a session token or a nonce hashes one to three of
    /// them; `Benchmarks/run`'s session check and never-issued-nonce figures guard this.
    package static func hash(utf8 text: String) -> SHA256.Digest {
        var text = text
        return text.withUTF8 { hash(data: UnsafeRawBufferPointer($0)) }
    }
}
