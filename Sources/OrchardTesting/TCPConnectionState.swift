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
        let suffix = ":" + String(format: "%04X", port)
        guard let text = ProcFS.text("/proc/net/tcp") else { return "no /proc/net/tcp" }
        // "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ..."
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[1].hasSuffix(suffix), fields[3] != "0A" else { continue }
            let socket = "socket:[\(fields[9])]"
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            let held = descriptors.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == socket }
            let state = names[String(fields[3])] ?? String(fields[3])
            return "\(state), queues \(fields[4]), \(held ? "held" : "not held") by this process"
        }
        return "no such connection"
        #else
        return "unknown"
        #endif
    }
}
