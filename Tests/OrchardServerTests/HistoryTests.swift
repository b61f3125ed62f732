import Accounts
import AppleIDEmulator
import Foundation
import Logging
import NIOHTTP1
import OrchardServer
import OrchardTesting
import SQLKit
import Storage
import Synchronization
import Testing

@Suite("Each account's history through the HTTP API")
struct HistoryTests {
    /// A page of `GET /v1/account/events` for `token`.
    static func page(_ h: OrchardHarness, _ token: String, query: String = "") async throws -> (events: [[String: Any]], next: String?) {
        let answer = try await h.request(.GET, "/v1/account/events\(query)", bearer: token)
        #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
        return (try #require(answer.json["events"] as? [[String: Any]]), answer.json["next"] as? String)
    }

    /// Every event of the account, newest first, `type` and `reason` joined.
    static func summary(_ h: OrchardHarness, _ token: String) async throws -> [String] {
        try await page(h, token, query: "?limit=100").events.map { event in
            [event["type"] as? String, event["reason"] as? String].compactMap { $0 }.joined(separator: ":")
        }
    }

    @Test("sign-ins, sign-outs on this and another device, Apple's daily verdicts folded per day, email forwarding: each recorded once, newest first")
    func lifecycle() async throws {
        try await OrchardHarness.with(jobs: .byTest) { h in
            let user = h.emulator.makeUser()
            let phone = try await h.signUp(user, device: "Ada's iPhone")
            h.clock.advance(by: 1)
            let laptop = try await h.signUp(user, device: "Ada's laptop")
            h.clock.advance(by: 1)
            let tablet = try await h.signUp(user)
            let phoneID = try #require(try await DeviceSessionsTests.sessions(h, tablet).last?["id"] as? String)
            h.clock.advance(by: 1)
            #expect(try await h.request(.DELETE, "/v1/sessions/\(phoneID)", bearer: tablet).status == 204)
            h.clock.advance(by: 1)
            #expect(try await h.request(.DELETE, "/v1/session", bearer: laptop).status == 204)
            #expect(try await h.request(.GET, "/v1/session", bearer: phone).status == 401)

            // Two validations in one UTC day with the same verdict are one event; the next day's is another.
            let due = h.clock.now().timeIntervalSince1970 + RefreshValidationTests.pastDue
            h.clock.advance(by: ((due / 86_400).rounded(.down) + 1) * 86_400 + 60 - h.clock.now().timeIntervalSince1970)
            #expect(await h.runJobs()[.validations] == 1)
            let day = (h.clock.now().timeIntervalSince1970 / 86_400).rounded(.down)
            try await h.database.withDatabase { db in try await db.raw("UPDATE accounts SET next_validation_at = 0").run() }
            h.clock.advance(by: 60)
            #expect(await h.runJobs()[.validations] == 1, "validated again the same day")
            #expect((h.clock.now().timeIntervalSince1970 / 86_400).rounded(.down) == day)
            h.clock.advance(by: RefreshValidationTests.pastDue)
            #expect(await h.runJobs()[.validations] == 1)
            h.clock.advance(by: 1)

            let disabled = try h.emulator.signNotification(
                type: "email-disabled",
                sub: user.sub,
                clientID: OrchardHarness.clientID,
                email: user.email,
                isPrivateEmail: true
            )
            #expect(try await h.postNotification(disabled).status == 200)
            await h.runJobs()
            #expect(await h.processed(try #require(disabled.jwsClaims["jti"] as? String)))

            let summary = try await Self.summary(h, tablet)
            #expect(
                summary == [
                    "email_forwarding_changed:disabled", "apple_validation:valid", "apple_validation:valid", "signed_out:user",
                    "signed_out:other_device", "signed_in", "signed_in", "signed_in",
                ],
                "\(summary)"
            )
            let all = try await Self.page(h, tablet, query: "?limit=100").events
            for event in all {
                #expect(Set(event.keys).isSubset(of: ["id", "type", "occurred_at", "session_id", "device", "reason"]), "\(event)")
                #expect((event["id"] as? String)?.hasPrefix("evt_") == true)
                #expect(event["occurred_at"] is String)
            }
            let sessions = all.filter { $0["type"] as? String == "signed_in" }
            #expect(sessions.map { $0["device"] as? String } == [nil, "Ada's laptop", "Ada's iPhone"])
            #expect(sessions.allSatisfy { ($0["session_id"] as? String)?.hasPrefix("sess_") == true })
            let ended = all.first { $0["reason"] as? String == "other_device" }
            #expect(ended?["session_id"] as? String == phoneID)
            #expect(ended?["device"] == nil)
            // Nothing of the sessions' tokens, the subject or the email in any event.
            let text = String(decoding: try JSONSerialization.data(withJSONObject: all), as: UTF8.self)
            for secret in [phone, laptop, tablet, user.sub, user.email ?? "-"] { #expect(!text.contains(secret)) }
        }
    }

    @Test("pages of at most `limit`, newest first, joined by `next` without a gap or a repeat; bad limits and cursors are invalid_request")
    func paging() async throws {
        try await OrchardHarness.with { h in
            // Another account whose event is older than every one of the user's: a cursor not scoped to the asking
            // account would page into it.
            let other = try await h.signUp(h.emulator.makeUser())
            h.clock.advance(by: 1)
            let user = h.emulator.makeUser()
            var token = ""
            for _ in 0..<5 {
                token = try await h.signUp(user)
                h.clock.advance(by: 1)
            }
            let whole = try await Self.page(h, token).events.compactMap { $0["id"] as? String }
            #expect(whole.count == 5)
            var walked: [String] = []
            var query = "?limit=2"
            var pages = 0
            while true {
                let page = try await Self.page(h, token, query: query)
                #expect(page.events.count <= 2)
                walked += page.events.compactMap { $0["id"] as? String }
                pages += 1
                guard let next = page.next else { break }
                query = "?limit=2&before=\(next)"
            }
            #expect(walked == whole)
            #expect(pages == 3)

            for bad in ["?limit=0", "?limit=101", "?limit=ten", "?before=sess_1", "?before=evt_%27%20OR%201=1"] {
                let answer = try await h.request(.GET, "/v1/account/events\(bad)", bearer: token)
                #expect(answer.status == 400, "\(bad)")
                #expect(answer.code == "invalid_request", "\(bad)")
            }
            // Another account's event as a cursor reads nothing of it: an empty page, though that account has an event
            // older than the cursor's.
            let foreign = try await Self.page(h, other, query: "?before=\(whole[0])")
            #expect(foreign.events.isEmpty)
            #expect(foreign.next == nil)

            let anonymous = try await h.request(.GET, "/v1/account/events")
            #expect(anonymous.status == 401)
            #expect(anonymous.code == "session_invalid")
            #expect(try await h.request(.DELETE, "/v1/session", bearer: token).status == 204)
            #expect(try await h.request(.GET, "/v1/account/events", bearer: token).code == "session_revoked")
        }
    }

    @Test("Apple's invalid_grant at a validation records the verdict and the revocation; consent-revoked the revocation")
    func revocations() async throws {
        try await OrchardHarness.with(jobs: .byTest) { h in
            let ada = h.emulator.makeUser()
            let token = try await h.signUp(ada)
            #expect(h.emulator.revokeGrant(sub: ada.sub) >= 1)
            h.clock.advance(by: RefreshValidationTests.pastDue)
            #expect(await h.runJobs()[.validations] == 1)
            h.clock.advance(by: 1)
            let again = try await h.signUp(ada)
            let summary = try await Self.summary(h, again)
            #expect(summary == ["signed_in", "credential_revoked:invalid_grant", "apple_validation:invalid_grant", "signed_in"], "\(summary)")
            _ = token

            h.clock.advance(by: 1)
            let revoked = try h.emulator.signNotification(type: "consent-revoked", sub: ada.sub, clientID: OrchardHarness.clientID)
            #expect(try await h.postNotification(revoked).status == 200)
            await h.runJobs()
            #expect(await h.processed(try #require(revoked.jwsClaims["jti"] as? String)))
            h.clock.advance(by: 1)
            let third = try await h.signUp(ada)
            let latest = try await Self.summary(h, third)
            #expect(latest.prefix(2) == ["signed_in", "credential_revoked:consent_revoked"], "\(latest)")
        }
    }

    @Test("an expired session gets its signed_out (expired) event at its expiry; events past ORCHARD_HISTORY_RETENTION are removed")
    func expiryAndRetention() async throws {
        try await OrchardHarness.with(
            configure: {
                $0.lifecycle.sessionTTL = .seconds(3_600)
                $0.lifecycle.retention.history = .seconds(10 * 86_400)
            },
            jobs: .byTest,
            { h in
                let user = h.emulator.makeUser()
                let first = try await h.signUp(user)
                let firstID = try #require(try await DeviceSessionsTests.sessions(h, first).first?["id"] as? String)
                h.clock.advance(by: 3_601)
                await h.runJobs(.retention)
                let second = try await h.signUp(user)
                let events = try await Self.page(h, second).events
                #expect(events.map { $0["type"] as? String } == ["signed_in", "signed_out", "signed_in"])
                #expect(events[1]["reason"] as? String == "expired")
                #expect(events[1]["session_id"] as? String == firstID)
                let signedIn = try #require(ISO8601DateFormatter().date(from: events[2]["occurred_at"] as? String ?? ""))
                #expect(events[1]["occurred_at"] as? String == DeviceSessionsTests.rfc3339(signedIn.addingTimeInterval(3_600)), "at the expiry")
                // Recorded once, however often retention runs.
                await h.runJobs(.retention)
                #expect(try await Self.page(h, second).events.count == 3)

                h.clock.advance(by: 10 * 86_400 - 1_800)
                await h.runJobs(.retention)
                let kept = try await Self.page(h, try await h.signUp(user)).events
                // The first sign-in is past the retention; its expiry, an hour later, is not yet.
                #expect(kept.map { $0["type"] as? String } == ["signed_in", "signed_in", "signed_out"], "\(kept)")
                #expect(kept.last?["session_id"] as? String == firstID)
            }
        )
    }

    @Test(
        "the expiry pass never leaves an event behind for an account a deletion removes at the same moment",
        .enabled(if: TestDatabase.selectedBackend == .postgres, "SQLite's one writer orders the two; the PostgreSQL pass runs it")
    )
    func expiryRacingDeletion() async throws {
        let gate = Mutex<GatedDatabaseClient?>(nil)
        try await OrchardHarness.with(
            configure: { $0.lifecycle.sessionTTL = .seconds(3_600) },
            wrapDatabase: { base in
                let gated = GatedDatabaseClient(base)
                gate.withLock { $0 = gated }
                return gated
            },
            jobs: .byTest,
            { h in
                let gated = try #require(gate.withLock { $0 })
                _ = try await h.signUp(h.emulator.makeUser())
                let accountID = try #require(try await h.accounts.listAccounts().first?.id)
                h.clock.advance(by: 3_601)
                // The expiry pass writes its event and is held inside its transaction, before it commits.
                gated.armInTransaction { $0.contains("INSERT INTO account_events") && $0.contains("'expired'") }
                let expiring = Task { await h.runJobs(.retention) }
                #expect(await eventually(timeout: 30) { gated.isHolding }, "the expiry pass reached its event")
                // Meanwhile an operator deletes the account: it either waits for the expiry's transaction or finishes.
                let deleting = Task { try await h.accounts.deleteAccount(id: accountID, reason: .byOperator, logger: Logger(label: "test")) }
                let waitingOnLock: SQLQueryString = """
                    SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                    """
                #expect(
                    await eventually(timeout: 30) {
                        let waiting = (try? await h.database.read(waitingOnLock).first?.decode(column: "n", as: Int.self)) ?? 0
                        let accounts = try? await h.rowCount("accounts")
                        return waiting > 0 || accounts == 0
                    }
                )
                gated.open()
                _ = await expiring.value
                _ = try await deleting.value
                #expect(try await h.rowCount("accounts") == 0)
                #expect(try await h.rowCount("account_events WHERE account_id = '\(accountID)'") == 0, "an event outlived its account")
            }
        )
    }

    @Test("a deletion removes the account's history in its transaction")
    func deletion() async throws {
        try await OrchardHarness.with { h in
            let token = try await h.signUp(h.emulator.makeUser(), device: "Ada's phone")
            let other = try await h.signUp(h.emulator.makeUser())
            #expect(try await h.rowCount("account_events") == 2)
            #expect(try await h.request(.DELETE, "/v1/account", bearer: token).status == 200)
            #expect(try await h.rowCount("account_events") == 1)
            #expect(try await Self.page(h, other).events.count == 1)
        }
    }
}
