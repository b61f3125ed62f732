/// Who the client of a request is: the socket's peer, or, when the peer is one of `ORCHARD_TRUSTED_PROXIES`, the
/// right-most address of `X-Forwarded-For` that is not itself a trusted proxy (the left-most when all are).
///
/// An untrusted peer's `X-Forwarded-For` is ignored whatever it says, so a client cannot pick its own identity; an
/// entry may carry a port (`203.0.113.7:41234`, `[2001:db8::1]:41234`), and an entry that is not an address stops the
/// walk at the trusted hop that forwarded it.
public struct ClientAddressResolver: Sendable {
    /// The trusted proxies.
    public let trustedProxies: [IPAddressRange]

    /// Creates the resolver.
    public init(trustedProxies: [IPAddressRange]) {
        self.trustedProxies = trustedProxies
    }

    /// The client's address.
    ///
    /// - Parameters:
    ///   - peer: The socket's peer (`nil` when unknown, e.g. a Unix socket).
    ///   - forwardedFor: Every `X-Forwarded-For` field of the request, in order.
    public func client(peer: IPAddress?, forwardedFor: [String]) -> IPAddress? {
        guard let peer, isTrusted(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }
        var nearest = peer
        for hop in hops.reversed() {
            guard let address = IPAddress(forwardedEntry: hop) else { return nearest }
            guard isTrusted(address) else { return address }
            nearest = address
        }
        return nearest
    }

    /// Whether `address` is one of the trusted proxies.
    public func isTrusted(_ address: IPAddress) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }
}
