import Foundation

/// Which process holds the socket listening on a TCP port, read from Linux's `/proc`.
///
/// A test picks a free port and then starts `orchard serve` on it; until serve has bound it, another test's serve that
/// picked the same port (or was given it by the kernel) may answer `/health/ready` there, and the test would then talk
/// to a stranger with another emulator's keys. Asking whether the answer came from the test's own process closes that.
enum ListeningSocket {
    /// Whether process `pid` holds a socket listening on `port` (any local address, IPv4 or IPv6). Where there is no
    /// `/proc` to ask, `true`: the caller then trusts the answer it got, as before.
    static func isHeld(port: Int, byProcess pid: Int32) -> Bool {
        #if os(Linux)
        let listening = Set(ProcFS.tcpSockets().filter { $0.state == "0A" && $0.localPort == port }.map(\.link))
        return !listening.isEmpty && !listening.isDisjoint(with: ProcFS.descriptorLinks(of: String(pid)))
        #else
        return true
        #endif
    }
}
