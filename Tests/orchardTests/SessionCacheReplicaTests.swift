import AppleIDEmulator
import Foundation
import Logging
import NIOHTTP1
import OrchardTesting
import SQLKit
import Storage
import Synchronization
import Testing

/// Three `orchard serve` replicas on one PostgreSQL database, each answering session checks from memory, tried the way
/// that would break a cache: sessions ended on one replica while every replica is asked for them at once, a replica
/// stopped past its lease, the database cutting every connection.
@Suite(
    "Replicas answer session checks from memory and never accept an ended one",
    .enabled(if: TestDatabase.selectedBackend == .postgres, "needs the PostgreSQL pass")
)
struct SessionCacheReplicaTests {
    static let clientID = "com.example.orchard.app"

    struct Replicas {
        let setup: ServeProcessTests.Setup
        let database: TestDatabase
        let replicas: [ServeProcess]
        /// Each replica's operator listener (`ORCHARD_ADMIN_PORT`).
        let adminPorts: [Int]
        /// The environment the replicas were started with.
        let environment: [String: String]

        static func start(_ count: Int = 3) async throws -> Replicas {
            let setup = try await ServeProcessTests.Setup.start()
            let database = try await TestDatabase.make(.postgres)
            guard case .postgres(let url) = database.url else { throw CancellationError() }
            var environment = setup.environment
            environment["ORCHARD_DATABASE_URL"] = url
            var replicas: [ServeProcess] = []
            var adminPorts: [Int] = []
            for _ in 0..<count {
                let adminPort = try await ServeProcess.freePort()
                var own = environment
                own["ORCHARD_ADMIN_PORT"] = String(adminPort)
                replicas.append(try await ServeProcess.start(environment: own, logDirectory: setup.directory.path, http: setup.http))
                adminPorts.append(adminPort)
            }
            return Replicas(setup: setup, database: database, replicas: replicas, adminPorts: adminPorts, environment: environment)
        }

        /// Replica `index`'s operator listener.
        func admin(_ index: Int) -> OrchardClient {
            OrchardClient(baseURL: "http://127.0.0.1:\(adminPorts[index])", http: setup.http, emulator: setup.emulator)
        }

        /// Makes an operator with `orchard operators add`, as an installation does; its token.
        func addOperator(_ name: String) async throws -> String {
            let added = try await OrchardProcess.runInBackground(["operators", "add", name], environment: environment)
            #expect(added.status == 0, "\(added.standardError)")
            return added.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func client(_ index: Int) -> OrchardClient { setup.client(replicas[index]) }
        var clients: [OrchardClient] { replicas.indices.map(client) }

        /// Signs in a new user on replica `index`; their session token.
        func signIn(on index: Int) async throws -> (token: String, user: EmulatedUser) {
            let user = setup.emulator.makeUser()
            let response = try await client(index).signIn(user, clientID: SessionCacheReplicaTests.clientID).response
            let token = try #require((response.json["session"] as? [String: Any])?["token"] as? String, "\(response.status)")
            return (token, user)
        }

        /// Waits until every replica answers each token from memory.
        func warm(_ tokens: [String]) async -> Bool {
            for client in clients {
                for token in tokens where !(await client.warmSessionCache(token: token)) { return false }
            }
            return true
        }

        func stop() async {
            for replica in replicas { await replica.terminate() }
            await database.remove()
            await setup.stop()
        }

        static func with(_ count: Int = 3, _ body: (Replicas) async throws -> Void) async throws {
            let replicas = try await start(count)
            do {
                try await body(replicas)
            } catch {
                await replicas.stop()
                throw error
            }
            await replicas.stop()
        }
    }

    /// Asks every replica for `token`'s session, over and over, until stopped, keeping their memories warm; records
    /// when each check was sent and what it got.
    final class Checker: Sendable {
        struct Check {
            let sent: ContinuousClock.Instant
            let status: Int
        }

        let checks = Mutex<[Check]>([])
        private let task = Mutex<Task<Void, Never>?>(nil)

        init(_ clients: [OrchardClient], token: String) {
            let task = Task {
                while !Task.isCancelled {
                    for client in clients {
                        let sent = ContinuousClock.now
                        if let response = try? await client.request(.GET, "/v1/session", bearer: token) {
                            self.checks.withLock { $0.append(Check(sent: sent, status: response.status)) }
                        }
                    }
                }
            }
            self.task.withLock { $0 = task }
        }

        /// Stops, and returns the checks sent after `instant` that were answered 200.
        func stop(acceptedAfter instant: ContinuousClock.Instant) async -> Int {
            let task = self.task.withLock { $0 }
            task?.cancel()
            await task?.value
            return checks.withLock { $0.filter { $0.sent > instant && $0.status == 200 }.count }
        }
    }

    /// Ends a session through `end` while every replica is being asked for it; then asks every replica again the moment
    /// the answer arrives. No check sent after the answer may be accepted.
    static func endWhileChecked(
        _ replicas: Replicas,
        token: String,
        _ end: () async throws -> Void
    ) async throws {
        let checker = Checker(replicas.clients, token: token)
        // The checks already run when the session ends: every replica has answered one.
        #expect(await eventually { checker.checks.withLock { $0.count } >= replicas.clients.count })
        try await end()
        let answered = ContinuousClock.now
        for client in replicas.clients {
            let status = try await client.request(.GET, "/v1/session", bearer: token).status
            #expect(status == 401, "a replica accepted the session right after it ended")
        }
        #expect(await checker.stop(acceptedAfter: answered) == 0, "a check sent after the end was accepted")
    }

    @Test(
        "sign-out, account deletion, an operator's end of every session and Apple's consent-revoked on one replica: no replica accepts the session afterwards"
    )
    func endsOnOneReplica() async throws {
        try await Replicas.with { replicas in
            var users: [(token: String, user: EmulatedUser)] = []
            for index in 0..<7 { users.append(try await replicas.signIn(on: index % 3)) }
            #expect(await replicas.warm(users.map(\.token)))

            // Sign-outs, each on another replica than the one that signed the user in.
            for (index, user) in users[0..<2].enumerated() {
                try await Self.endWhileChecked(replicas, token: user.token) {
                    let response = try await replicas.client((index + 1) % 3).request(.DELETE, "/v1/session", bearer: user.token)
                    #expect(response.status == 204)
                }
            }
            // Deletions.
            for (index, user) in users[2..<4].enumerated() {
                try await Self.endWhileChecked(replicas, token: user.token) {
                    let response = try await replicas.client((index + 2) % 3).request(.DELETE, "/v1/account", bearer: user.token)
                    #expect(response.status == 200)
                }
            }
            // An operator ends every session of an account on another replica's private listener.
            let operatorToken = try await replicas.addOperator("ada")
            let session = try await replicas.client(0).request(.GET, "/v1/session", bearer: users[6].token)
            let accountID = try #require((session.json["account"] as? [String: Any])?["id"] as? String)
            try await Self.endWhileChecked(replicas, token: users[6].token) {
                let response = try await replicas.admin(1).request(.DELETE, "/admin/v1/accounts/\(accountID)/sessions", bearer: operatorToken)
                #expect(response.status == 200)
                #expect(response.json["ended"] as? Int == 1)
            }
            // Apple's consent-revoked: processing follows the notification's 200; once one replica refuses, none may
            // accept again, and all refuse within 2 s of the 200.
            for (index, user) in users[4..<6].enumerated() {
                let payload = try replicas.setup.emulator.signNotification(type: "consent-revoked", sub: user.user.sub, clientID: Self.clientID)
                let checker = Checker(replicas.clients, token: user.token)
                let posted = try await replicas.client(index).request(.POST, "/v1/apple/notifications", json: ["payload": payload])
                #expect(posted.status == 200)
                let accepted = ContinuousClock.now
                // The rule counts from the 200 (which came before `accepted`): every check sent 2 s or more after it is
                // refused, however slowly the checker goes round the replicas; so the test waits for such checks to be
                // answered rather than for the first refusal to come early.
                let deadline = accepted + .seconds(2)
                #expect(
                    await eventually(timeout: 30) {
                        checker.checks.withLock { $0.filter { $0.sent >= deadline }.count >= replicas.clients.count }
                    },
                    "no check was answered that was sent 2 s after the 200"
                )
                let firstRefusal = checker.checks.withLock { $0.first { $0.sent > accepted && $0.status == 401 }?.sent } ?? deadline
                let acceptedLate = checker.checks.withLock { $0.filter { $0.sent >= deadline && $0.status == 200 }.count }
                #expect(await checker.stop(acceptedAfter: firstRefusal) == 0, "accepted after a replica had refused")
                #expect(acceptedLate == 0, "\(acceptedLate) checks sent 2 s or more after the notification's 200 were accepted")
            }
            // The untouched replicas' memories still answer for live sessions.
            let live = try await replicas.signIn(on: 0)
            #expect(await replicas.warm([live.token]))
        }
    }

    @Test(
        "a replica whose listener hangs while its pool works stops answering from memory within its lease: a sign-out elsewhere is refused there at once"
    )
    func listenerLostWhilePoolWorks() async throws {
        let setup = try await ServeProcessTests.Setup.start()
        let database = try await TestDatabase.make(.postgres)
        guard case .postgres(let url) = database.url, var components = URLComponents(string: url), let host = components.host,
            let port = components.port
        else { throw CancellationError() }
        // Replica 1 listens through a proxy that the test takes away; its pool goes to the database directly.
        let proxy = try await StallingTCPProxy.start(to: host, port: port)
        components.host = "127.0.0.1"
        components.port = proxy.port
        var environment = setup.environment
        environment["ORCHARD_DATABASE_URL"] = url
        var replicas: [ServeProcess] = []
        do {
            replicas.append(try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http))
            environment["ORCHARD_DATABASE_LISTEN_URL"] = components.string ?? url
            replicas.append(try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http))
            let all = Replicas(setup: setup, database: database, replicas: replicas, adminPorts: [], environment: environment)
            let user = try await all.signIn(on: 0)
            #expect(await all.warm([user.token]))
            // The listener's connection hangs (open, but nothing passes: a lost route, a stalled middlebox), so no
            // close tells replica 1 anything, while its pool serves every check: a checker asks replica 1 all along, so
            // its memory entry (1 s) is always fresh. Only the lease (2 s, renewed only while the listener hears the
            // database) can make replica 1 stop answering from memory.
            let checker = Checker([all.client(1)], token: user.token)
            #expect(await eventually(timeout: 30) { checker.checks.withLock { $0.count >= 5 } }, "the checker never got going")
            let stalled = ContinuousClock.now
            proxy.stall()
            let signedOut = try await all.client(0).request(.DELETE, "/v1/session", bearer: user.token)
            #expect(signedOut.status == 204)
            let answered = ContinuousClock.now
            let next = try await all.client(1).request(.GET, "/v1/session", bearer: user.token)
            #expect(next.status == 401, "the replica without a listener answered \(next.status) right after the sign-out")
            #expect(await checker.stop(acceptedAfter: answered) == 0, "a check sent after the sign-out was accepted")
            // The case the lease exists for needs the entry kept fresh from the stall to the sign-out's answer: no gap
            // of 1 s (the entry's lifetime) between two answered checks there, or the entry lifetime, not the lease,
            // refused.
            let lastBefore = checker.checks.withLock { $0.last { $0.sent < stalled }?.sent } ?? stalled
            let during = checker.checks.withLock { $0.filter { $0.sent >= stalled && $0.sent < answered }.map(\.sent) }
            let times = [lastBefore] + during + [answered]
            let widest = zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? .zero
            #expect(widest < .seconds(1), "the checker left replica 1's entry to lapse: a gap of \(widest) between checks")
        } catch {
            for replica in replicas { await replica.kill() }
            await proxy.stop()
            await database.remove()
            await setup.stop()
            throw error
        }
        for replica in replicas { await replica.terminate() }
        await proxy.stop()
        await database.remove()
        await setup.stop()
    }

    /// Its memory's entries (1 s) are older than the lease (2 s) by the time it resumes, so the entry lifetime alone
    /// would refuse here; the lease rule itself is shown by `listenerLostWhilePoolWorks`.
    ///
    /// The hold is measured from where the rule counts: the stopped replica's last lease, as `session_cache_replicas`
    /// holds it (the database's clock, this machine's), or the request, when the lease had ended before it was sent.
    /// A sign-out that waited for the acknowledgement's own limit (4 s) rather than the lease ends past the bound.
    @Test("a replica stopped past its lease holds a sign-out up for at most the lease, and does not answer from its old memory when it resumes")
    func stoppedReplica() async throws {
        try await Replicas.with { replicas in
            let user = try await replicas.signIn(on: 0)
            #expect(await replicas.warm([user.token]))
            replicas.replicas[2].send(SIGSTOP)
            let leases = try await Self.leases(replicas)
            let sent = Date()
            let response = try await replicas.client(0).request(.DELETE, "/v1/session", bearer: user.token)
            let answered = Date()
            #expect(response.status == 204)
            // The lease no replica renewed meanwhile is the stopped one's (the latest such, should a busy machine have
            // kept a running replica from renewing too).
            let renewed = try await Self.leases(replicas)
            let lastLease = try #require(leases.filter { renewed[$0.key] == $0.value }.values.max(), "every lease was renewed")
            let counted = max(sent, Date(timeIntervalSince1970: Double(lastLease) / 1000))
            #expect(
                answered.timeIntervalSince(counted) < 2,
                "the sign-out answered \(answered.timeIntervalSince(counted)) s after the stopped replica's lease ended (sent \(sent), lease \(lastLease))"
            )
            replicas.replicas[2].send(SIGCONT)
            let resumed = try await replicas.client(2).request(.GET, "/v1/session", bearer: user.token)
            #expect(resumed.status == 401, "the stopped replica answered its old memory after resuming")
            #expect(resumed.code == "session_revoked")
        }
    }

    /// Every replica's lease end, by replica, in milliseconds since 1970.
    static func leases(_ replicas: Replicas) async throws -> [String: Int64] {
        let rows = try await replicas.database.client.read("SELECT id, lease_until FROM session_cache_replicas")
        return try Dictionary(
            rows.map { (try $0.decode(column: "id", as: String.self), try $0.decode(column: "lease_until", as: Int64.self)) },
            uniquingKeysWith: max
        )
    }

    @Test("the database ends every connection during sign-outs: each sign-out that is answered is refused everywhere")
    func terminatedConnections() async throws {
        try await Replicas.with { replicas in
            var tokens: [String] = []
            for index in 0..<6 { tokens.append(try await replicas.signIn(on: index % 3).token) }
            #expect(await replicas.warm(tokens))
            // Every replica has its listener connection, named as the contract says.
            let listeners = try await replicas.database.client.read(
                "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE application_name = 'orchard-listener' AND datname = current_database()"
            ).first?.decode(column: "n", as: Int.self)
            #expect(listeners == 3)
            for (index, token) in tokens.enumerated() {
                try await Self.endWhileChecked(replicas, token: token) {
                    _ = try await replicas.database.client.read(
                        """
                        SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
                        WHERE application_name LIKE 'orchard%' AND datname = current_database() AND pid <> pg_backend_pid()
                        """
                    )
                    // The sign-out may meet the outage (503); it is tried again until answered.
                    var status = 0
                    var attempts: [String] = []
                    let deadline = ContinuousClock.now + .seconds(30)
                    while status != 204, ContinuousClock.now < deadline {
                        let sent = ContinuousClock.now
                        do {
                            status = try await replicas.client(index % 3).request(.DELETE, "/v1/session", bearer: token).status
                            attempts.append("\(status) after \(ContinuousClock.now - sent)")
                        } catch {
                            status = 0
                            attempts.append("\(error) after \(ContinuousClock.now - sent)")
                        }
                        if status == 401 { break }
                    }
                    #expect(
                        status == 204 || status == 401,
                        "sign-out answered \(status): \(attempts); replicas' logs: \(replicas.replicas.map { String($0.logText.suffix(3_000)) })"
                    )
                }
            }
        }
    }
}
