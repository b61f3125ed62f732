import Foundation

/// Reading Linux's `/proc`: whole files, the kernel's table of TCP sockets, and which sockets a process holds.
enum ProcFS {
    /// The whole text of `path`. `String(contentsOfFile:)` trusts the size `stat` gives, and a `/proc` file says 0:
    /// it then returns the first page only (about 27 lines of `/proc/net/tcp`, whose connections follow its listeners).
    static func text(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        // `nil` from `readToEnd` is an empty file; an error reads as empty too.
        return String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
    }

    /// One line of `/proc/net/tcp` (or `tcp6`).
    struct TCPSocket {
        /// The kernel's state, in hex: `01` established, `0A` listening, `08` close-wait, ...
        let state: String
        /// The local port.
        let localPort: Int?
        /// `tx_queue:rx_queue`, in hex.
        let queues: String
        /// How `/proc/PID/fd` links name it: `socket:[INODE]`.
        let link: String
    }

    /// The sockets of `tables`.
    static func tcpSockets(in tables: [String] = ["/proc/net/tcp", "/proc/net/tcp6"]) -> [TCPSocket] {
        tables.flatMap { table -> [TCPSocket] in
            guard let text = text(table) else { return [] }
            // "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ..."
            return text.split(separator: "\n").dropFirst().compactMap { line in
                let fields = line.split(separator: " ")
                guard fields.count > 9 else { return nil }
                return TCPSocket(
                    state: String(fields[3]),
                    localPort: fields[1].split(separator: ":").last.flatMap { Int($0, radix: 16) },
                    queues: String(fields[4]),
                    link: "socket:[\(fields[9])]"
                )
            }
        }
    }

    /// What the file descriptors of process `pid` (`self` for this one) link to, e.g. `socket:[INODE]`.
    static func descriptorLinks(of pid: String) -> Set<String> {
        let folder = "/proc/\(pid)/fd"
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return Set(descriptors.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\($0)") })
    }
}
