import Accounts
import AppleIDEmulator
import Foundation
import Logging
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Prometheus
import SQLKit
import Storage
import Testing

@Suite("Session lifetime tied to Apple: refresh-token validation")
struct RefreshValidationTests {
    /// One interval plus the largest jitter (an hour) and a little.
    static let pastDue: Double = 86_400 + 3_600 + 5

    static func refreshCalls(_ h: OrchardHarness) -> [EmulatorCall] {
        h.emulator.calls(to: .token).filter { $0.grantType == "refresh_token" }
    }

    static func session(_ h: OrchardHarness, _ token: String) async throws -> TestResponse {
        try await h.request(.GET, "/v1/session", bearer: token)
    }

    @Test("each account is validated once per interval, and the validation moves last_validated_at on")
    func oncePerInterval() async throws {
        try await OrchardHarness.with(jobs: .byTest) { h in
            let token = try await h.signUp(h.emulator.makeUser())
            let before = try await Self.session(h, token).json["account"] as? [String: Any]
            h.clock.advance(by: 86_399)
            #expect(await h.runJobs()[.validations] == 0, "due before the interval was over")
            #expect(Self.refreshCalls(h).isEmpty)
            h.clock.advance(by: Self.pastDue - 86_399)
            #expect(await h.runJobs()[.validations] == 1)
            #expect(Self.refreshCalls(h).count == 1)
            #expect(await h.runJobs()[.validations] == 0, "validated twice in one interval")
            #expect(Self.refreshCalls(h).count == 1)
            #expect(Self.refreshCalls(h).first?.clientID == OrchardHarness.clientID)
            let after = try await Self.session(h, token)
            #expect(after.status == 200)
            let account = try #require(after.json["account"] as? [String: Any])
            #expect(account["last_validated_at"] as? String != before?["last_validated_at"] as? String)
            #expect(account["apple_credential"] as? String == "valid")
            #expect(h.counted("orchard_refresh_validations_total", [("outcome", "valid")]) == 1)
            h.clock.advance(by: Self.pastDue)
            #expect(await h.runJobs()[.validations] == 1)
            #expect(Self.refreshCalls(h).count == 2)
            #expect(h.counted("orchard_refresh_validations_total", [("outcome", "valid")]) == 2)
            #expect(h.counted("orchard_refresh_validations_total") == 2)
            // Each pass records the backlog left after its claim: drained here.
            #expect(h.gaugeValues("orchard_refresh_validations_due").last == 0)
            #expect(h.gaugeValues("orchard_refresh_validation_oldest_overdue_seconds").last == 0)
            #expect(h.timerValues("orchard_apple_request_duration_seconds", [("endpoint", "token"), ("outcome", "ok")]).count == 3)
        }
    }

    @Test("revoking the app at Apple ends every session of that account, and only that account")
    func revokedAtApple() async throws {
        try await OrchardHarness.withWebhooks(jobs: .byTest) { h, receiver in
            let ada = h.emulator.makeUser()
            let bob = h.emulator.makeUser()
            let adaPhone = try await h.signUp(ada)
            let adaLaptop = try await h.signUp(ada)
            let bobPhone = try await h.signUp(bob)
            let adaID = try #require(try await Self.session(h, adaPhone).json["account"] as? [String: Any])["id"] as? String
            #expect(h.emulator.revokeGrant(sub: ada.sub) >= 1)
            h.clock.advance(by: Self.pastDue)
            #expect(await h.runJobs()[.validations] == 2)
            for token in [adaPhone, adaLaptop] {
                let response = try await Self.session(h, token)
                #expect(response.status == 401)
                #expect(response["reason"] == "apple_credential_revoked")
            }
            #expect(Self.refreshCalls(h).count == 2)
            let bobSession = try await Self.session(h, bobPhone)
            #expect(bobSession.status == 200)
            #expect((bobSession.json["account"] as? [String: Any])?["apple_credential"] as? String == "valid")
            await h.runJobs()
            #expect(await eventually { receiver.delivered.count == 1 })
            #expect(receiver.delivered.first?.json["type"] as? String == "account.credential_revoked")
            #expect(receiver.delivered.first?.json["reason"] as? String == "invalid_grant")
            #expect(receiver.delivered.first?.json["account_id"] as? String == adaID)
            let revoked = try await h.accounts.account(id: try #require(adaID))
            #expect(revoked.appleCredential == .revoked)

            // No more validations for a revoked credential (only Bob's is due); a new grant brings it back.
            h.clock.advance(by: Self.pastDue)
            #expect(await h.runJobs()[.validations] == 1)
            #expect(Self.refreshCalls(h).filter { $0.status == 400 }.count == 1)
            #expect(h.counted("orchard_refresh_validations_total", [("outcome", "invalid_grant")]) == 1)
            // Bob's credential was validated at each of the two intervals.
            #expect(h.counted("orchard_refresh_validations_total", [("outcome", "valid")]) == 2)
            #expect(h.counted("orchard_webhooks_total", [("outcome", "delivered")]) == 1)
            let again = try await h.signIn(ada).response
            #expect((again.json["account"] as? [String: Any])?["apple_credential"] as? String == "valid")
        }
    }

    @Test("an Apple outage keeps every session and retries; a long one never signs anyone out")
    func outage() async throws {
        try await OrchardHarness.with(jobs: .byTest) { h in
            let token = try await h.signUp(h.emulator.makeUser())
            h.emulator.injectFailure(endpoint: .token, failure: .status(503), count: 1000)
            h.clock.advance(by: Self.pastDue)
            #expect(await h.runJobs()[.validations] == 1)
            // Retried with backoff: not due again at once, due again within the longest delay.
            #expect(await h.runJobs()[.validations] == 0)
            for _ in 0..<3 {
                h.clock.advance(by: 700)
                #expect(await h.runJobs()[.validations] == 1)
            }
            #expect(Self.refreshCalls(h).count == 4)
            #expect(Self.refreshCalls(h).allSatisfy { $0.status == 503 })
            #expect(h.counted("orchard_refresh_validations_total", [("outcome", "unavailable")]) == Self.refreshCalls(h).count)
            #expect(h.timerValues("orchard_apple_request_duration_seconds", [("endpoint", "token"), ("outcome", "unavailable")]).count >= 2)
            #expect(try await Self.session(h, token).status == 200)
            h.emulator.clearFailures()
            h.clock.advance(by: 700)
            #expect(await h.runJobs()[.validations] == 1)
            #expect(Self.refreshCalls(h).last?.status == 200)
            #expect(h.counted("orchard_refresh_validations_total", [("outcome", "valid")]) == 1)
            #expect(try await Self.session(h, token).status == 200)
        }
    }

    @Test("invalid_client is a configuration fault: nobody is signed out")
    func invalidClient() async throws {
        try await OrchardHarness.with { h in
            let token = try await h.signUp(h.emulator.makeUser())
            h.emulator.injectFailure(endpoint: .token, failure: .appleError("invalid_client"), count: 1000)
            h.clock.advance(by: Self.pastDue)
            #expect(await eventually { Self.refreshCalls(h).count == 1 })
            #expect(await eventually { h.counted("orchard_refresh_validations_total", [("outcome", "client_rejected")]) == 1 })
            #expect(h.counted("orchard_apple_client_rejected_total", [("endpoint", "token")]) == 1)
            let response = try await Self.session(h, token)
            #expect(response.status == 200)
            #expect((response.json["account"] as? [String: Any])?["apple_credential"] as? String == "valid")
        }
    }

    @Test("only accounts with a live session are validated")
    func onlyLiveSessions() async throws {
        try await OrchardHarness.with(jobs: .byTest) { h in
            let token = try await h.signUp(h.emulator.makeUser())
            #expect(try await h.request(.DELETE, "/v1/session", bearer: token).status == 204)
            h.clock.advance(by: Self.pastDue)
            // The due account is looked at, found without a live session, and left dormant: Apple is not called.
            #expect(await h.runJobs()[.validations] == 1)
            #expect(h.counted("orchard_refresh_validations_total", [("outcome", "dormant")]) == 1)
            h.clock.advance(by: Self.pastDue)
            #expect(await h.runJobs()[.validations] == 0, "a dormant account is not due until its next sign-in")
            #expect(Self.refreshCalls(h).isEmpty)
            #expect(h.counted("orchard_refresh_validations_total") == 1)
        }
    }

    static func extraValidator(_ h: OrchardHarness) async throws -> Lifecycle {
        try await buildLifecycle(
            OrchardDependencies(
                configuration: h.configuration,
                database: h.database,
                sessionBackend: h.testDatabase.sessionBackend,
                httpClient: h.http,
                clock: h.clock,
                registry: PrometheusCollectorRegistry(),
                logger: Logger(label: "test.validator")
            )
        ).0
    }

    @Test("three validators over one database never validate an account twice in an interval, and a restart does not validate early")
    func severalValidators() async throws {
        try await OrchardHarness.with { h in
            var users: [EmulatedUser] = []
            for _ in 0..<12 {
                let user = h.emulator.makeUser()
                users.append(user)
                _ = try await h.signUp(user)
            }
            // A restarted validator (a fresh lifecycle over the same file) finds nothing due yet.
            let restarted = try await Self.extraValidator(h)
            #expect(await restarted.validateDue(limit: 64, logger: Logger(label: "test")) == 0)
            #expect(Self.refreshCalls(h).isEmpty)

            let second = try await Self.extraValidator(h)
            h.clock.advance(by: Self.pastDue)
            async let a = restarted.validateDue(limit: 5, logger: Logger(label: "a"))
            async let b = second.validateDue(limit: 5, logger: Logger(label: "b"))
            _ = await (a, b)
            #expect(await eventually { Self.refreshCalls(h).count == users.count })
            _ = await restarted.validateDue(limit: 64, logger: Logger(label: "a"))
            _ = await second.validateDue(limit: 64, logger: Logger(label: "b"))
            let calls = Self.refreshCalls(h)
            #expect(calls.count == users.count)
            #expect(Set(calls.compactMap(\.refreshToken)).count == users.count)
        }
    }
}
