import Foundation

/// What Linux's `/proc` says of a connection of this process, for a test that gave up waiting for the server to close
/// it: whether the server's close reached this end (`CLOSE_WAIT`: it did, and the event loop never saw it) or not
/// (`ESTABLISHED`), and whether this process still holds the socket.
enum TCPConnectionState {
    /// The state of the connection whose local end is `127.0.0.1:port`, its queues, and whether this process holds it.
    static func describe(localPort port: Int?) -> String {
        #if os(Linux)
        guard let port else { return "no local address" }
        let names = [
            "01": "ESTABLISHED", "02": "SYN_SENT", "04": "FIN_WAIT1", "05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE",
            "08": "CLOSE_WAIT", "09": "LAST_ACK", "0B": "CLOSING",
        ]
        guard let socket = ProcFS.tcpSockets(in: ["/proc/net/tcp"]).first(where: { $0.localPort == port && $0.state != "0A" })
        else { return "no such connection" }
        let held = ProcFS.descriptorLinks(of: "self").contains(socket.link)
        return "\(names[socket.state] ?? socket.state), queues \(socket.queues), \(held ? "held" : "not held") by this process"
        #else
        return "unknown"
        #endif
    }
}
