import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import OrchardTesting
import Synchronization
import Testing

/// A PostgreSQL cluster of this test's own, so stopping it disturbs no other test.
struct DedicatedCluster {
    let url: String
    let data: String
    let bin: String
    let user: String

    static func start() throws -> DedicatedCluster {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/start-test-postgres")
        // The script's output goes to a file: a pipe's write end can stay open in this process and never give EOF.
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("cluster-\(UUID().uuidString).env")
        Self.shell("bash '\(script.path)' > '\(output.path)'")
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(at: output)
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("export ") {
            let pair = line.dropFirst("export ".count).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { values[String(pair[0])] = String(pair[1]) }
        }
        guard let url = values["ORCHARD_TEST_POSTGRES_URL"], let data = values["ORCHARD_TEST_POSTGRES_DATA"],
            let bin = values["ORCHARD_TEST_POSTGRES_BIN"], let user = values["ORCHARD_TEST_POSTGRES_USER"]
        else { throw CancellationError() }
        return DedicatedCluster(url: url, data: data, bin: bin, user: user)
    }

    var port: String { URLComponents(string: url)?.port.map(String.init) ?? "5432" }

    func pgctl(_ arguments: String) {
        let directory = (data as NSString).deletingLastPathComponent
        let command = "\(bin)/pg_ctl -D \(data) -l \(directory)/server.log -w \(arguments)"
        shell("su -s /bin/sh \(user) -c \"\(command)\" >/dev/null 2>&1")
    }

    /// Runs a shell command and waits for it with `waitpid` (Foundation's `Process` did not reap it here).
    @discardableResult
    static func shell(_ command: String) -> Int32 {
        var pid: pid_t = 0
        let arguments = ["/bin/sh", "-c", command]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        // As a shell would start it (ChildProcess's rule): no signal blocked, every disposition the default, so that
        // the cluster pg_ctl starts can be stopped.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        guard posix_spawn(&pid, "/bin/sh", nil, &attributes, &argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return status
    }

    func shell(_ command: String) { Self.shell(command) }

    func stop() { pgctl("stop -m fast") }

    func start() {
        let directory = (data as NSString).deletingLastPathComponent
        pgctl("-o '-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off' start")
    }

    func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: (data as NSString).deletingLastPathComponent)
    }
}

@Suite(
    "PostgreSQL stopped and started under load",
    .enabled(if: TestDatabase.selectedBackend == .postgres && getuid() == 0, "needs the PostgreSQL pass and root to run a cluster of its own")
)
struct DatabaseOutageTests {
    @Test("while the database is down: 503 storage_unavailable and readiness 503, never a 500; both recover, nothing lost")
    func outageUnderLoad() async throws {
        let cluster = try await offThePool { try DedicatedCluster.start() }
        let setup: ServeProcessTests.Setup
        do {
            setup = try await ServeProcessTests.Setup.start()
        } catch {
            try? await offThePool { cluster.remove() }
            throw error
        }
        var environment = setup.environment
        environment["ORCHARD_DATABASE_URL"] = cluster.url
        // Not a test of the grace (ServeProcessTests has one): on a loaded machine, the shutdown after the outage took
        // longer than 10 s + 5 s, and ServiceLifecycle ends an overdue group with a crash.
        environment["ORCHARD_SHUTDOWN_GRACE"] = "60"
        // ServiceLifecycle says at debug level which services are still shutting down.
        environment["ORCHARD_LOG_LEVEL"] = "debug"
        let serve = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
        do {
            let client = setup.client(serve)
            let user = setup.emulator.makeUser()
            let signIn = try await client.signIn(user, clientID: "com.example.orchard.app").response
            let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)

            let statuses = Mutex<[Int]>([])
            let load = Task {
                while !Task.isCancelled {
                    for path in ["/v1/session", "/health/ready"] {
                        if let response = try? await client.request(.GET, path, bearer: token) {
                            statuses.withLock { $0.append(response.status) }
                        }
                    }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            // Answers before the outage, to compare with.
            #expect(await eventually { statuses.withLock { $0.count } >= 4 })
            let outageBegan = Date()
            try await offThePool { cluster.stop() }
            let sawOutage = await eventually {
                (try? await client.request(.GET, "/health/ready"))?.status == 503
            }
            #expect(sawOutage)
            let during = try await client.request(.GET, "/v1/session", bearer: token)
            #expect(during.status == 503)
            #expect(during.code == "storage_unavailable")
            // The client learns that the database cannot be used, not which engine failed or how; the log says that.
            #expect(during["detail"] == "the database cannot be used right now; try again shortly")
            #expect(!String(decoding: during.body, as: UTF8.self).contains("PostgreSQL"))
            #expect(try await client.request(.POST, "/v1/auth/apple/nonce").code == "storage_unavailable")
            // Apple's notification is not acknowledged while it cannot be stored (Apple may send it again), and a
            // deletion changes nothing.
            let notification = try setup.emulator.signNotification(type: "email-disabled", sub: user.sub, clientID: "com.example.orchard.app")
            let unstored = try await client.request(.POST, "/v1/apple/notifications", json: ["payload": notification])
            #expect(unstored.status == 503)
            #expect(unstored.code == "storage_unavailable")
            #expect(try await client.request(.DELETE, "/v1/account", bearer: token).code == "storage_unavailable")
            // The job kinds cannot claim while the database is down (they try every second).
            let claimsFailed = await eventually { !Self.kinds(logging: "cannot claim jobs", in: serve.logText).isEmpty }
            #expect(claimsFailed, "no job kind logged a failed claim")
            try await offThePool { cluster.start() }
            let recovered = await eventually {
                (try? await client.request(.GET, "/health/ready"))?.status == 200
            }
            #expect(recovered, "\(serve.logText.suffix(3000))")
            load.cancel()
            _ = await load.value
            #expect(try await client.request(.GET, "/v1/session", bearer: token).status == 200)
            // Sent again once the database is back, the notification is new to Orchard, stored and acted on.
            let resent = try await client.request(.POST, "/v1/apple/notifications", json: ["payload": notification])
            #expect(resent.status == 200)
            #expect(resent["status"] == "accepted")
            // Loaded runs (8 tests at once beside a release build) took over 30 s here after the restart.
            let forwardingOff = await eventually {
                let account = (try? await client.request(.GET, "/v1/session", bearer: token))?.json["account"] as? [String: Any]
                return account?["email_forwarding"] as? String == "disabled"
            }
            #expect(forwardingOff, "the resent notification was not acted on: \(serve.logText.suffix(4000))")
            // Each kind that could not claim says so once it claims again; until then, it logged its failures once and
            // then at most once per 10 s (before, once per kind per second).
            let failedKinds = Set(Self.kinds(logging: "cannot claim jobs", in: serve.logText))
            let claimingAgain = await eventually {
                failedKinds.isSubset(of: Self.kinds(logging: "claiming jobs again", in: serve.logText))
            }
            #expect(claimingAgain, "\(serve.logText.suffix(4000))")
            let outageSeconds = Date().timeIntervalSince(outageBegan)
            let failureLines = Self.kinds(logging: "cannot claim jobs", in: serve.logText)
            for kind in failedKinds {
                let count = failureLines.filter { $0 == kind }.count
                #expect(count <= 1 + Int(outageSeconds / 10), "\(kind): \(count) lines in \(Int(outageSeconds)) s")
            }
            let seen = statuses.withLock { $0 }
            // The outage is logged with PostgreSQL's reason, once and then at most every 10 s, not once per 503.
            let outageLines = serve.logText.split(separator: "\n").filter { $0.contains("storage unavailable: requests are answered 503") }
            #expect(!outageLines.isEmpty && outageLines.allSatisfy { $0.contains("PostgreSQL") }, "\(outageLines)")
            // The rule is time, not requests: the first failure and then at most one line per 10 s of outage. (Compared
            // with the background load's 503s once, this failed on a loaded CI machine where the load saw none and a
            // 45 s outage rightly logged 5 lines.)
            #expect(outageLines.count <= 1 + Int(outageSeconds / 10), "\(outageLines.count) lines in \(Int(outageSeconds)) s")
            #expect(outageLines.dropFirst().allSatisfy { $0.contains("storage.unlogged_failures") }, "\(outageLines)")
            // Whatever the background load got answered, none was a 500. (Whether any of its requests fell inside the
            // outage depends on the machine's load; the 503s are asserted directly above.)
            #expect(!seen.contains(500), "a 500 was answered during the outage")
            let status = await serve.terminate()
            // Enough of the log to show what serve was still doing when a shutdown overran (once on CI: exit 4 after
            // the grace and the cancellation period, with only the backtrace in the last 4,000 characters).
            #expect(status == 0, "serve exited \(status): \(serve.logText.suffix(30000))")
        } catch {
            await serve.kill()
            await setup.stop()
            try? await offThePool { cluster.remove() }
            throw error
        }
        await setup.stop()
        try await offThePool { cluster.remove() }
    }

    /// 2.5 s into the outage the memory's entries (1 s) have lapsed too, so what refuses here is the entry lifetime as much
    /// as the lease; the lease alone is shown by `SessionCacheReplicaTests.listenerLostWhilePoolWorks`.
    @Test("a restart under two replicas that remember sessions: no memory answers while it is down, a later sign-out is refused by both")
    func restartUnderReplicas() async throws {
        let cluster = try await offThePool { try DedicatedCluster.start() }
        let setup: ServeProcessTests.Setup
        do {
            setup = try await ServeProcessTests.Setup.start()
        } catch {
            try? await offThePool { cluster.remove() }
            throw error
        }
        var environment = setup.environment
        environment["ORCHARD_DATABASE_URL"] = cluster.url
        environment["ORCHARD_SHUTDOWN_GRACE"] = "60"
        var replicas: [ServeProcess] = []
        do {
            for _ in 0..<2 {
                replicas.append(try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http))
            }
            let clients = replicas.map(setup.client)
            var tokens: [String] = []
            for client in clients {
                let response = try await client.signIn(setup.emulator.makeUser(), clientID: "com.example.orchard.app").response
                tokens.append(try #require((response.json["session"] as? [String: Any])?["token"] as? String))
            }
            for client in clients {
                for token in tokens { #expect(await client.warmSessionCache(token: token)) }
            }
            try await offThePool { cluster.stop() }
            let stopped = Date()
            // Past the entries' lifetime (1 s) and the lease (2 s), both counted from before the stop (the last read,
            // the last renewal), no replica answers from memory: a check needs the database and is refused for the
            // outage. Each check is asked until it is refused; one still answered from memory once 2.5 s have passed
            // since the stop (later than the rules' own moments) fails the test, and so does any answer after that.
            for client in clients {
                for token in tokens {
                    let refused = await eventually(timeout: max(0, 2.5 - Date().timeIntervalSince(stopped))) {
                        (try? await client.request(.GET, "/v1/session", bearer: token))?.status == 503
                    }
                    #expect(refused, "a replica still answered from memory 2.5 s after the database stopped")
                }
            }
            let signedIn = tokens
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in clients {
                    group.addTask {
                        for token in signedIn {
                            let during = try await client.request(.GET, "/v1/session", bearer: token)
                            #expect(during.status == 503, "a replica answered \(during.status) from memory during the outage")
                        }
                    }
                }
                try await group.waitForAll()
            }
            try await offThePool { cluster.start() }
            for client in clients {
                #expect(await eventually(timeout: 60) { (try? await client.request(.GET, "/health/ready"))?.status == 200 })
            }
            // Back: a sign-out on one replica is refused by both once answered.
            let signedOut = try await clients[0].request(.DELETE, "/v1/session", bearer: tokens[1])
            #expect(signedOut.status == 204)
            for client in clients {
                let after = try await client.request(.GET, "/v1/session", bearer: tokens[1])
                #expect(after.status == 401)
                #expect(after.code == "session_revoked")
            }
            // And each memory answers again once its listener is back and warmed up.
            for client in clients { #expect(await client.warmSessionCache(token: tokens[0], timeout: 60)) }
        } catch {
            for replica in replicas { await replica.kill() }
            await setup.stop()
            try? await offThePool { cluster.remove() }
            throw error
        }
        for replica in replicas { await replica.terminate() }
        await setup.stop()
        try await offThePool { cluster.remove() }
    }

    /// The `job.kind` of each log line with this message, in the log's order.
    static func kinds(logging message: String, in log: String) -> [String] {
        log.split(separator: "\n").filter { $0.hasSuffix(" " + message) }.compactMap { line in
            line.firstRange(of: "job.kind=").map { String(line[$0.upperBound...].prefix { $0 != " " }) }
        }
    }
}
