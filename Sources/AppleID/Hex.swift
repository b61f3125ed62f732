/// Lowercase hexadecimal text of bytes: the one hex encoder of every Orchard module (hashes, ids, salts).
///
/// It writes the text straight into the string's storage, two table lookups per byte, rather than formatting byte by
/// byte with `String(format:)`; `Benchmarks/run`'s session check guards this.
extension Sequence where Element == UInt8 {
    /// The bytes as lowercase hexadecimal text, two characters per byte.
    public var hexString: String {
        let bytes = Array(self)
        return String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            for (index, byte) in bytes.enumerated() {
                buffer[index * 2] = hexDigits[Int(byte >> 4)]
                buffer[index * 2 + 1] = hexDigits[Int(byte & 0x0F)]
            }
            return bytes.count * 2
        }
    }
}

private let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
