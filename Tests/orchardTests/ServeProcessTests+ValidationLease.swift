import Accounts
import AppleID
import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import Logging
import OrchardTesting
import SQLKit
import Storage
import Testing

extension ServeProcessTests {
    @Test("kill -9 with refresh validations in flight: after a restart each is tried again once its 15 s lease ends, not before")
    func validationTakenOverWithinLease() async throws {
        let setup = try await Setup.start(timeoutHold: .seconds(60))
        defer { Task { await setup.stop() } }
        var environment = setup.environment
        environment["ORCHARD_REFRESH_VALIDATION_INTERVAL"] = "2"
        let first = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
        let client = setup.client(first)
        for _ in 0..<24 {
            #expect(try await client.signIn(setup.emulator.makeUser(), clientID: "com.example.orchard.app").response.status == 200)
        }
        // Apple stops answering: the next pass's validations hang in flight.
        setup.emulator.injectFailure(endpoint: .token, failure: .timeout, count: 1000)
        // Orchard gives up on a call after its own 10 s and ends the lease, and the next pass claims the account again:
        // a call Apple still holds is in flight only while its validation holds a lease, so it is the latest call of
        // its refresh token, and its lease is read from the database (at the kill, once serve is gone).
        func held() -> [String: EmulatorCall] {
            var latest: [String: EmulatorCall] = [:]
            for call in setup.emulator.calls(to: .token) where call.grantType == "refresh_token" {
                if let token = call.refreshToken { latest[token] = call }
            }
            return latest.filter { $0.value.status == nil }
        }
        // Killed while many are in flight: held calls that reached Apple less than 5 s ago, under a lease.
        let enough = try await eventually {
            let leases = try await Self.validationLeases(setup)
            let fresh = held().filter { Date().timeIntervalSince($0.value.time) < 5 && leases[$0.key] != nil }
            return fresh.count >= 16
        }
        #expect(enough, "never 16 validations in flight at once: \(first.logText)")
        await first.kill()
        // Each lease counts from its claim, which may come well before its call reaches Apple on a busy machine: the
        // retry is measured from the lease the killed replica wrote, by the refresh token it was validating.
        let leases = try await Self.validationLeases(setup)
        let inFlight = held().filter { leases[$0.key] != nil }
        #expect(inFlight.count >= 8, "only \(inFlight.count) validations held a lease at the kill: \(first.logText)")
        setup.emulator.clearFailures()
        let second = try await ServeProcess.start(
            environment: environment,
            port: first.port,
            logDirectory: setup.directory.path,
            http: setup.http
        )
        // A lease that ended before the new replica was up is taken over at its first passes.
        let up = Date()
        // A retry is answered (a call held before the kill ends, at Apple's hold, as a 504).
        for (token, call) in inFlight {
            func retried() -> EmulatorCall? {
                setup.emulator.calls(to: .token).first { $0.sequence > call.sequence && $0.refreshToken == token && $0.status == 200 }
            }
            #expect(await eventually { retried() != nil }, "never validated again: \(second.logText)")
            let leaseEnd = try #require(leases[token])
            let retriedAt = try #require(retried()).time
            // Not before the lease ends (the lease is stored to the millisecond); then at a pass of the new replica.
            #expect(retriedAt.timeIntervalSince(leaseEnd) >= -0.001, "validated again before the lease ended")
            let late = retriedAt.timeIntervalSince(max(leaseEnd, up))
            #expect(late <= 5, "validated again \(late) s after the lease ended and the replica was up")
        }
        await second.kill()
    }

    /// The validation leases in the SQLite file, by the refresh token each account holds (opened with the vault key).
    static func validationLeases(_ setup: Setup) async throws -> [String: Date] {
        let key = try #require(setup.environment["ORCHARD_VAULT_KEYS"]?.split(separator: ":", maxSplits: 1))
        let vault = TokenVault(keys: [try VaultKey(id: String(key[0]), keyBytes: try #require(Data(base64Encoded: String(key[1]))))])
        let database = try await SQLiteDatabaseClient.open(path: setup.directory.file("orchard.sqlite"), logger: Logger(label: "test"))
        let rows = try await database.read(
            "SELECT id, sealed_refresh_token, validation_lease_until FROM accounts WHERE validation_lease_until IS NOT NULL"
        )
        await database.close()
        var leases: [String: Date] = [:]
        for row in rows {
            let id = try row.decode(column: "id", as: String.self)
            let sealed = try row.decode(column: "sealed_refresh_token", as: String.self)
            let token = try vault.open(sealed, context: SealingContext.account(id, .refreshToken)).value
            leases[token] = Date(timeIntervalSince1970: Double(try row.decode(column: "validation_lease_until", as: Int64.self)) / 1000)
        }
        return leases
    }
}
