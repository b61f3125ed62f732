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
        let inodes = listeningInodes(port: port)
        guard !inodes.isEmpty else { return false }
        let folder = "/proc/\(pid)/fd"
        guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return false }
        return descriptors.contains { descriptor in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\(descriptor)") else {
                return false
            }
            return inodes.contains(target)
        }
        #else
        return true
        #endif
    }

    /// `socket:[INODE]` of each socket in state LISTEN (`0A`) on `port`, as `/proc/PID/fd` links name them.
    private static func listeningInodes(port: Int) -> Set<String> {
        let suffix = ":" + String(format: "%04X", port)
        var inodes = Set<String>()
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = ProcFS.text(table) else { continue }
            // "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ..."
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9, fields[3] == "0A", fields[1].hasSuffix(suffix) else { continue }
                inodes.insert("socket:[\(fields[9])]")
            }
        }
        return inodes
    }
}
