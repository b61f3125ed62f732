import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's PgBouncer in front of the test cluster, in `pool_mode=transaction` (as managed PostgreSQL services offer
/// it): what `ORCHARD_DATABASE_POOLER=transaction` is for. Runs as the cluster's own user when the tests run as root
/// (PgBouncer refuses root).
public final class PgBouncer: @unchecked Sendable {
    private let process: Process
    private let directory: TemporaryDirectory
    /// Where it listens.
    public let port: Int

    /// Whether Debian's `pgbouncer` is installed.
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: "/usr/sbin/pgbouncer") }

    private init(process: Process, directory: TemporaryDirectory, port: Int) {
        self.process = process
        self.directory = directory
        self.port = port
    }

    /// `url` (a database of the test cluster) reached through this PgBouncer instead.
    public func url(for url: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.host = "127.0.0.1"
        components.port = port
        return components.string ?? url
    }

    /// Starts PgBouncer in front of the cluster `adminURL` names and waits until it accepts connections.
    public static func start(before cluster: String, poolMode: String = "transaction") async throws -> PgBouncer {
        guard let components = URLComponents(string: cluster), let host = components.host, let clusterPort = components.port else {
            throw HarnessError("not a postgres:// URL: \(cluster)")
        }
        let directory = try TemporaryDirectory(prefix: "orchard-test-pgbouncer")
        let port = try await ServeProcess.freePort()
        let user = components.user ?? "orchard"
        try """
        [databases]
        * = host=\(host) port=\(clusterPort)
        [pgbouncer]
        listen_addr = 127.0.0.1
        listen_port = \(port)
        auth_type = trust
        auth_file = \(directory.file("userlist.txt"))
        pool_mode = \(poolMode)
        max_client_conn = 1000
        default_pool_size = 40
        ignore_startup_parameters = extra_float_digits
        unix_socket_dir =
        logfile = \(directory.file("pgbouncer.log"))
        """.write(toFile: directory.file("pgbouncer.ini"), atomically: true, encoding: .utf8)
        try "\"\(user)\" \"\"\n".write(toFile: directory.file("userlist.txt"), atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/pgbouncer")
        var arguments = [directory.file("pgbouncer.ini")]
        if geteuid() == 0 {
            let owner = ProcessInfo.processInfo.environment["ORCHARD_TEST_POSTGRES_USER"] ?? "postgres"
            guard let entry = getpwnam(owner) else { throw HarnessError("no user \(owner) for PgBouncer") }
            chown(directory.path, entry.pointee.pw_uid, entry.pointee.pw_gid)
            for file in ["pgbouncer.ini", "userlist.txt"] { chown(directory.file(file), entry.pointee.pw_uid, entry.pointee.pw_gid) }
            arguments = ["-u", owner] + arguments
        }
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ChildProcess.start(process)
        let bouncer = PgBouncer(process: process, directory: directory, port: port)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            guard process.isRunning else { throw HarnessError("pgbouncer exited: \(bouncer.log)") }
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            Glibc.close(socket)
            if connected { return bouncer }
            try await Task.sleep(for: .milliseconds(50))
        }
        await bouncer.stop()
        throw HarnessError("pgbouncer did not listen: \(bouncer.log)")
    }

    /// What PgBouncer logged.
    public var log: String { (try? String(contentsOfFile: directory.file("pgbouncer.log"), encoding: .utf8)) ?? "" }

    /// Stops it and removes its files.
    public func stop() async {
        await ChildProcess.end(process)
        directory.remove()
    }
}
