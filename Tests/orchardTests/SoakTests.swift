import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import OrchardTesting
import SQLKit
import Storage
import Synchronization
import Testing

/// Many user lifecycles against real `orchard serve` processes and the emulator, with Apple failing at random (5xx,
/// 429, held requests) and the server killed with `kill -9` every ~20 s. At the end nothing may be lost or repeated.
///
/// `ORCHARD_SOAK_SECONDS` sets how long the lifecycles run (default 45: the short version every test run includes);
/// `ORCHARD_SOAK_KILL_EVERY` the mean seconds between kills (default 20). The figures are printed at the end.
@Suite("Soak: user lifecycles, Apple faults and kill -9")
struct SoakTests {
    static let settings = ProcessInfo.processInfo.environment
    static let seconds = Double(settings["ORCHARD_SOAK_SECONDS"] ?? "") ?? 45
    static let killEvery = Double(settings["ORCHARD_SOAK_KILL_EVERY"] ?? "") ?? 20
    static let clientID = "com.example.orchard.app"
    /// Lifecycles run at once.
    static let workers = 6

    /// How one user's life ends in the soak.
    enum Fate: String, CaseIterable, Sendable {
        /// `DELETE /v1/account`: Apple must see the token revoked.
        case deletedByUser
        /// `consent-revoked` after the grant was revoked at Apple: signed out, account kept.
        case consentRevoked
        /// `account-delete` from Apple: deleted, nothing to revoke.
        case deletedByApple
        /// `email-disabled`, `email-enabled`, then `DELETE /v1/session`.
        case signedOut
        /// Still signed in at the end, through every fault and kill.
        case live
    }

    struct Life: Sendable {
        let user: EmulatedUser
        let accountID: String
        let token: String
        let fate: Fate
    }

    /// The running server, restarted on the same port after each kill.
    actor Server {
        let environment: [String: String]
        let directory: String
        let http: HTTPClient
        let port: Int
        private(set) var process: ServeProcess
        private(set) var kills = 0

        init(environment: [String: String], directory: String, http: HTTPClient) async throws {
            self.environment = environment
            self.directory = directory
            self.http = http
            process = try await ServeProcess.start(environment: environment, logDirectory: directory, http: http)
            port = process.port
        }

        func killAndRestart() async throws {
            await process.kill()
            kills += 1
            process = try await ServeProcess.start(environment: environment, port: port, logDirectory: directory, http: http)
        }

        func stop() async -> Int32 { await process.terminate() }
    }

    /// What went differently from a clean run, counted for the report.
    final class Tally: Sendable {
        let counts = Mutex<[String: Int]>([:])
        let lives = Mutex<[Life]>([])
        func add(_ key: String, _ amount: Int = 1) { counts.withLock { $0[key, default: 0] += amount } }
        var snapshot: [String: Int] { counts.withLock { $0 } }
    }

    struct Unexpected: Error, CustomStringConvertible {
        let description: String
    }

    @Test("soak: lifecycles of every kind under Apple faults and kill -9; nothing lost, nothing repeated, nothing left")
    func soak() async throws {
        // Held requests end after 6 s: past a deletion's 5 s wait, within the background worker's 10 s deadline.
        let setup = try await ServeProcessTests.Setup.start(timeoutHold: .seconds(6))
        let (emulator, http) = (setup.emulator, setup.http)
        let receiver = try await WebhookReceiver.start()
        let database = try await TestDatabase.make()
        defer {
            Task {
                await receiver.stop()
                await database.remove()
                await setup.stop()
            }
        }
        let databaseURL =
            switch database.url {
            case .sqlite(let path): "sqlite:\(path)"
            case .postgres(let url): url
            }
        var environment = setup.environment
        environment.merge(
            [
                "ORCHARD_DATABASE_URL": databaseURL, "ORCHARD_LOG_LEVEL": "warning",
                "ORCHARD_WEBHOOK_URLS": receiver.url, "ORCHARD_WEBHOOK_SECRET": "soak-webhook-secret",
                "ORCHARD_REFRESH_VALIDATION_INTERVAL": "5", "ORCHARD_RATE_LIMIT_PER_MINUTE": "0",
            ]
        ) { $1 }
        let server = try await Server(environment: environment, directory: setup.directory.path, http: http)
        let client = OrchardClient(baseURL: "http://127.0.0.1:\(server.port)", http: http, emulator: emulator)
        emulator.setNotifyURL(client.baseURL + "/v1/apple/notifications")
        let tally = Tally()
        // The faults' and kills' choices come from one seeded generator: printed, so that a red run can be replayed with
        // ORCHARD_SOAK_SEED (CI fixes it; elsewhere a fresh one each run).
        let seed = Self.seed
        print("soak: ORCHARD_SOAK_SEED=\(seed)")
        let chance = SeededRandom(seed: seed)
        let started = ContinuousClock.now
        let end = started + .seconds(Self.seconds)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<Self.workers {
                group.addTask {
                    var index = worker
                    while ContinuousClock.now < end {
                        let fate = Fate.allCases[index % Fate.allCases.count]
                        index += Self.workers
                        let life = try await Self.live(fate, client: client, emulator: emulator, tally: tally)
                        tally.lives.withLock { $0.append(life) }
                    }
                }
            }
            // Apple misbehaves now and then: 5xx, 429 or a held request, on the token and revoke endpoints.
            group.addTask {
                let failures: [EmulatorFailure] = [.status(503), .status(500), .status(429), .timeout]
                while ContinuousClock.now < end {
                    try await Task.sleep(for: .milliseconds(chance.int(in: 500...1500)))
                    let failure = failures[chance.int(in: 0...(failures.count - 1))]
                    emulator.injectFailure(endpoint: chance.int(in: 0...1) == 0 ? .revoke : .token, failure: failure, count: chance.int(in: 1...2))
                    tally.add("apple faults injected")
                }
            }
            group.addTask {
                while ContinuousClock.now + .seconds(Self.killEvery / 2) < end {
                    try await Task.sleep(for: .seconds(Self.killEvery * (0.5 + Double(chance.int(in: 0...1_000)) / 1_000)))
                    try await server.killAndRestart()
                }
            }
            try await group.waitForAll()
        }
        emulator.clearFailures()

        // Drained: nothing queued, nothing unprocessed, every webhook delivered.
        let drainStarted = ContinuousClock.now
        var pending: [String: Int] = [:]
        let drained = await eventually(timeout: 240) {
            pending = [
                "revocations": (try? await Self.count(database, "SELECT COUNT(*) AS n FROM revocations")) ?? -1,
                "notifications": (try? await Self.count(database, "SELECT COUNT(*) AS n FROM notification_inbox WHERE processed_at IS NULL")) ?? -1,
                "webhooks": (try? await Self.count(database, "SELECT COUNT(*) AS n FROM webhook_outbox WHERE status <> 'delivered'")) ?? -1,
            ]
            return pending.values.allSatisfy { $0 == 0 }
        }
        #expect(drained, "still pending at the end: \(pending)")
        let drainTook = ContinuousClock.now - drainStarted

        let all = tally.lives.withLock { $0 }
        let byFate = Dictionary(grouping: all, by: \.fate)
        let deleted = (byFate[.deletedByUser] ?? []) + (byFate[.deletedByApple] ?? [])

        // No lost revocation: every user-deleted account's tokens were revoked at Apple at least once.
        var duplicates = 0
        for life in byFate[.deletedByUser] ?? [] {
            let counts = emulator.issuedTokens(sub: life.user.sub).map { emulator.revocationCount(token: $0) }
            #expect(counts.contains { $0.whileValid >= 1 }, "the deletion of \(life.accountID) never reached Apple")
            duplicates += counts.map { max(0, $0.total - 1) }.reduce(0, +)
        }
        // Apple's own deletions and revoked consent revoke nothing.
        for life in (byFate[.deletedByApple] ?? []) + (byFate[.consentRevoked] ?? []) {
            let counts = emulator.issuedTokens(sub: life.user.sub).map { emulator.revocationCount(token: $0).total }
            #expect(counts.allSatisfy { $0 == 0 }, "\(life.fate) of \(life.accountID) revoked a token")
        }

        // Exactly one account.deleted event id per deleted account, and none for the others.
        let deletedEvents = Dictionary(
            grouping: receiver.attempts.map(\.json).filter { $0["type"] as? String == "account.deleted" },
            by: { $0["account_id"] as? String ?? "" }
        ).mapValues { Set($0.compactMap { $0["id"] as? String }) }
        for life in deleted {
            #expect(deletedEvents[life.accountID]?.count == 1, "account.deleted ids for \(life.accountID): \(deletedEvents[life.accountID] ?? [])")
        }
        #expect(Set(deletedEvents.keys).subtracting(deleted.map(\.accountID)).isEmpty, "account.deleted for an account that was not deleted")

        // Every session answers as its user's fate says: faults and kills signed no live user out.
        for life in all {
            let answer = try await client.request(.GET, "/v1/session", bearer: life.token)
            switch life.fate {
            case .live: #expect(answer.status == 200, "a live user of \(life.accountID) was refused: \(answer.status) \(answer["reason"] ?? "")")
            case .deletedByUser, .deletedByApple: #expect(answer.status == 401 && answer["reason"] == "account_deleted")
            case .consentRevoked: #expect(answer.status == 401 && answer["reason"] == "apple_credential_revoked")
            case .signedOut: #expect(answer.status == 401 && answer["reason"] == "signed_out")
            }
        }

        // Nothing of a deleted user is left: no account row, no open session (ended ones stay, to answer
        // `account_deleted`), and none of their values in any database file.
        let deletedIDs = deleted.map { "'\($0.accountID)'" }.joined(separator: ",")
        if !deleted.isEmpty {
            #expect(try await Self.count(database, "SELECT COUNT(*) AS n FROM accounts WHERE id IN (\(deletedIDs))") == 0)
            let open = "SELECT COUNT(*) AS n FROM sessions WHERE account_id IN (\(deletedIDs)) AND ended_at IS NULL"
            #expect(try await Self.count(database, open) == 0)
        }
        let files = try await database.files().reduce(into: Data()) { $0.append($1.bytes) }
        let secrets = deleted.flatMap { life in
            ([life.user.sub, life.user.email ?? "", life.token] + emulator.issuedTokens(sub: life.user.sub)).map { ($0, life.accountID) }
        }
        let found = Self.occurrences(of: secrets.map(\.0), in: files)
        for (secret, accountID) in secrets where found.contains(secret) {
            Issue.record("a value of deleted account \(accountID) is in the database files")
        }
        let kills = await server.kills
        #expect(await server.stop() == 0)

        let counts = tally.snapshot
        let report = [
            "soak (\(database.backend.rawValue)): \(Int(Self.seconds)) s, \(all.count) lifecycles",
            Fate.allCases.map { "\($0.rawValue) \(byFate[$0]?.count ?? 0)" }.joined(separator: ", "),
            "drained \(drainTook.formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 1)))) after the last lifecycle",
            "kill -9: \(kills); Apple faults injected: \(counts["apple faults injected"] ?? 0)",
            "accepted revocations: \(emulator.calls(to: .revoke).filter { $0.status == 200 }.count) for \(byFate[.deletedByUser]?.count ?? 0) deletions; duplicates: \(duplicates)",
            "requests retried: "
                + counts.filter { $0.key != "apple faults injected" }.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
                    separator: ", "
                ),
        ].joined(separator: "\n  ")
        print(report)
    }

    /// One user's whole life, each step retried through kills and Apple's faults until it lands.
    static func live(_ fate: Fate, client: OrchardClient, emulator: AppleEmulator, tally: Tally) async throws -> Life {
        let user = emulator.makeUser()
        let (accountID, token) = try await retrying("sign-in", tally) { () -> (String, String)? in
            let answer = try await client.signIn(user, clientID: clientID).response
            if [502, 503, 504].contains(answer.status) { return nil }
            guard answer.status == 200,
                let token = (answer.json["session"] as? [String: Any])?["token"] as? String,
                let id = (answer.json["account"] as? [String: Any])?["id"] as? String
            else { throw Unexpected(description: "sign-in answered \(answer.status): \(String(decoding: answer.body, as: UTF8.self))") }
            return (id, token)
        }
        for _ in 0..<3 {
            try await retrying("session check", tally) { () -> Bool? in
                let answer = try await client.request(.GET, "/v1/session", bearer: token)
                guard answer.status == 200 else { throw Unexpected(description: "a fresh session was refused: \(answer.status)") }
                return true
            }
        }
        switch fate {
        case .deletedByUser:
            try await retrying("deletion", tally) { () -> Bool? in
                let answer = try await client.request(.DELETE, "/v1/account", bearer: token)
                // A retry after a kill finds the deletion the lost answer was about.
                if answer.status == 200 || (answer.status == 401 && answer["reason"] == "account_deleted") { return true }
                throw Unexpected(description: "DELETE /v1/account answered \(answer.status)")
            }
        case .consentRevoked:
            _ = emulator.revokeGrant(sub: user.sub)
            try await notify("consent-revoked", user, emulator: emulator, tally: tally)
        case .deletedByApple:
            try await notify("account-delete", user, emulator: emulator, tally: tally)
        case .signedOut:
            try await notify("email-disabled", user, emulator: emulator, tally: tally)
            try await notify("email-enabled", user, emulator: emulator, tally: tally)
            try await retrying("sign-out", tally) { () -> Bool? in
                let answer = try await client.request(.DELETE, "/v1/session", bearer: token)
                if answer.status == 204 || (answer.status == 401 && answer["reason"] == "signed_out") { return true }
                throw Unexpected(description: "DELETE /v1/session answered \(answer.status)")
            }
        case .live:
            break
        }
        return Life(user: user, accountID: accountID, token: token, fate: fate)
    }

    /// Apple's notification, sent again (same `jti`, as Apple does) until Orchard answers 200.
    static func notify(_ type: String, _ user: EmulatedUser, emulator: AppleEmulator, tally: Tally) async throws {
        let jti = "soak-" + UUID().uuidString
        try await retrying("notification", tally) { () -> Bool? in
            let status = try await emulator.sendNotification(
                type: type,
                sub: user.sub,
                clientID: clientID,
                email: user.email,
                isPrivateEmail: user.isPrivateEmail,
                jti: jti
            )
            return status == 200 ? true : nil
        }
    }

    /// Runs `step` until it returns a value: a thrown transport error (the server is being restarted) or `nil` (Apple
    /// was failing) is tried again after a moment; ``Unexpected`` ends the soak.
    @discardableResult
    static func retrying<T>(_ name: String, _ tally: Tally, _ step: () async throws -> T?) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            do {
                if let value = try await step() { return value }
            } catch let error as Unexpected {
                throw error
            } catch {
                // The server is down between a kill and its restart.
            }
            tally.add(name)
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Unexpected(description: "\(name) did not land within 120 s")
    }

    /// Which of `needles` (8 bytes or longer) occur in `haystack`, in one pass over it: thousands of `Data.range(of:)`
    /// through a database's files would take minutes.
    static func occurrences(of needles: [String], in haystack: Data) -> Set<String> {
        let byPrefix = Dictionary(grouping: needles.filter { $0.utf8.count >= 8 }.map { Array($0.utf8) }) { needle in
            needle.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        }
        var found: Set<String> = []
        haystack.withUnsafeBytes { bytes in
            guard bytes.count >= 8 else { return }
            for offset in 0...(bytes.count - 8) {
                guard let candidates = byPrefix[bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)] else { continue }
                for needle in candidates where offset + needle.count <= bytes.count {
                    if needle.elementsEqual(bytes[offset..<(offset + needle.count)]) {
                        found.insert(String(decoding: needle, as: UTF8.self))
                    }
                }
            }
        }
        return found
    }

    static func count(_ database: TestDatabase, _ sql: String) async throws -> Int {
        try await database.client.count(sql)
    }

    /// `ORCHARD_SOAK_SEED`, else 1 under `CI=true` (a red CI run is replayed as it ran), else a fresh one.
    static var seed: UInt64 {
        let environment = ProcessInfo.processInfo.environment
        if let given = environment["ORCHARD_SOAK_SEED"].flatMap(UInt64.init) { return given }
        return environment["CI"] == "true" ? 1 : UInt64.random(in: 1...UInt64.max)
    }
}

/// SplitMix64 behind a lock: the soak's choices, the same sequence for the same seed.
final class SeededRandom: Sendable {
    private let state: Mutex<UInt64>

    init(seed: UInt64) {
        state = Mutex(seed)
    }

    /// The next value in `range`.
    func int(in range: ClosedRange<Int>) -> Int {
        let next = state.withLock { state -> UInt64 in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return range.lowerBound + Int(next % UInt64(range.count))
    }
}
