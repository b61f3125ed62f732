package import Crypto
import Foundation

/// Lowercase hexadecimal text of bytes: the one hex encoder of every Orchard module (hashes, ids, salts).
///
/// It writes the text straight into the string's storage, two table lookups per byte, rather than formatting byte by
/// byte with `String(format:)`, and reads bytes kept contiguously (an array, a buffer, a digest's storage) where they
/// are, without first copying them into an array; `Benchmarks/run`'s session check guards this.
extension Sequence where Element == UInt8 {
    /// The bytes as lowercase hexadecimal text, two characters per byte.
    public var hexString: String {
        if let text = withContiguousStorageIfAvailable({ hexText(UnsafeRawBufferPointer($0)) }) { return text }
        return Array(self).withUnsafeBytes(hexText)
    }
}

extension Digest {
    /// The digest as lowercase hexadecimal text, read from its own storage (a digest keeps its bytes contiguously but
    /// offers them to a `Sequence` only one by one).
    package var hexString: String {
        self.withUnsafeBytes { hexText($0) }
    }
}

/// `bytes` as lowercase hexadecimal text.
private func hexText(_ bytes: UnsafeRawBufferPointer) -> String {
    String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
        for (index, byte) in bytes.enumerated() {
            buffer[index * 2] = hexDigit(byte >> 4)
            buffer[index * 2 + 1] = hexDigit(byte & 0x0F)
        }
        return bytes.count * 2
    }
}

/// The lowercase hexadecimal digit of `nibble` (0–15).
@inline(__always)
private func hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
}
