#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as its network-order bytes; an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is kept as
/// its IPv4 form, so that a dual-stack listener's peers match IPv4 ranges.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6).
    public let bytes: [UInt8]

    /// Parses `text` (`192.0.2.1`, `2001:db8::1`, `::ffff:192.0.2.1`); `nil` when it is neither.
    public init?(_ text: some StringProtocol) {
        var text = String(text).trimmingSpaces
        // `[2001:db8::1]` as some proxies write it, and a zone id (`fe80::1%eth0`) are tolerated.
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let percent = text.firstIndex(of: "%") { text = String(text[..<percent]) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            self.bytes = Array(bytes[12..<16])
        } else {
            self.bytes = bytes
        }
    }

    /// Parses an entry of `X-Forwarded-For`, which some proxies write with the client's port (`203.0.113.7:41234`,
    /// `[2001:db8::1]:41234`): the address is what counts.
    public init?(forwardedEntry text: some StringProtocol) {
        let entry = String(text).trimmingSpaces
        if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
            let rest = entry[entry.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isASCIIDigitCharacter) && rest.count > 1) else {
                return nil
            }
            self.init(entry[...close])
        } else if entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") {
            let port = entry[entry.index(after: colon)...]
            guard !port.isEmpty, port.allSatisfy(\.isASCIIDigitCharacter) else { return nil }
            self.init(entry[..<colon])
        } else {
            self.init(entry)
        }
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Whose budget a request from this address spends: an IPv4 address is its own, an IPv6 address shares its /64
    /// with every address of it (one host usually holds a whole /64, and could take a new address per request).
    public var budgetKey: IPAddress {
        guard bytes.count == 16 else { return self }
        return IPAddress(bytes: Array(bytes[0..<8]) + Array(repeating: 0, count: 8))
    }

    /// The canonical text form.
    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count))
        }
        guard written != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An address or a CIDR range (`10.0.0.0/8`, `2001:db8::/32`, or one address): an entry of `ORCHARD_TRUSTED_PROXIES`.
public struct IPAddressRange: Hashable, Sendable, CustomStringConvertible {
    /// The range's first address.
    public let network: IPAddress
    /// How many leading bits must match.
    public let prefixLength: Int

    /// Parses `a.b.c.d`, `a.b.c.d/n`, an IPv6 address or `v6/n`; `nil` for anything else.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let address = IPAddress(parts[0]) else { return nil }
        let bits = address.bytes.count * 8
        var length = bits
        if parts.count == 2 {
            guard let value = Int(parts[1]), (0...bits).contains(value) else { return nil }
            // `::ffff:10.0.0.0/104` names an IPv4 range in IPv6 notation: count the prefix in the IPv4 form.
            length = parts[0].contains(":") && bits == 32 ? value - 96 : value
            guard length >= 0 else { return nil }
        }
        self.network = address
        self.prefixLength = length
    }

    /// Whether `address` lies in the range (an IPv4 address never matches an IPv6 range, and the other way round).
    public func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == network.bytes.count else { return false }
        var remaining = prefixLength
        for index in network.bytes.indices where remaining > 0 {
            let take = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - take))
            if address.bytes[index] & mask != network.bytes[index] & mask { return false }
            remaining -= take
        }
        return true
    }

    /// `network/prefix`.
    public var description: String { "\(network)/\(prefixLength)" }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return String(text)
    }
}
