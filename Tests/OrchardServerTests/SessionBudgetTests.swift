import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Storage
import Synchronization
import Testing

/// The signed-in routes that end sessions or mint access tokens share one budget per session, and a change that ends
/// nothing costs nothing: a signed-in client cannot make Orchard do more work than its own sessions justify.
@Suite("Budgets for signed-in routes")
struct SessionBudgetTests {
    @Test("DELETE /v1/sessions, DELETE /v1/sessions/{id} and POST /v1/session/token share one budget per session, checked first")
    func sharedBudgetPerSession() async throws {
        try await OrchardHarness.with(
            // Six a minute: the two sign-ups below take four of the address's budget, and each session has six.
            configure: { $0.listener.rateLimitPerMinute = 6 },
            { h in
                let user = h.emulator.makeUser()
                let flooding = try await h.signUp(user)
                let other = try await h.signUp(user)
                #expect(try await h.request(.DELETE, "/v1/sessions/sess_unknown", bearer: flooding).code == "not_found")
                #expect(try await h.request(.DELETE, "/v1/sessions/sess_unknown", bearer: flooding).code == "not_found")
                for _ in 0..<4 { #expect(try await h.request(.POST, "/v1/session/token", bearer: flooding).status == 200) }

                let refused = try await h.request(.DELETE, "/v1/sessions", bearer: flooding)
                #expect(refused.status == 429)
                #expect(refused.code == "rate_limited")
                #expect(refused.header("Retry-After") == "10", "six a minute: a token every 10 seconds")
                #expect(try await h.request(.GET, "/v1/session", bearer: other).status == 200, "nothing ended")
                #expect(try await h.request(.POST, "/v1/session/token", bearer: flooding).code == "rate_limited")
                // Before anything else: before the session lookup and the cookie's Origin rule.
                let cookie = try await h.request(
                    .DELETE,
                    "/v1/sessions",
                    headers: [("Cookie", "__Host-orchard_session=\(flooding)"), ("Origin", "https://evil.example")]
                )
                #expect(cookie.code == "rate_limited")
                // However the path is spelled: a spelling reaches the route and its budget, or is an unknown path.
                var limited = 0
                for spelling in RouteSpellingTests.spellings("/v1/sessions") {
                    let answer = try await RawHTTP.send(port: h.server.port, "DELETE", spelling, headers: [("Authorization", "Bearer \(flooding)")])
                    #expect([404, 429].contains(answer.status), "DELETE \(spelling) answered \(answer.status)")
                    if answer.status == 429 { limited += 1 }
                }
                #expect(limited >= 4)

                // The session check is not budgeted, and another session of the account has a budget of its own.
                #expect(try await h.request(.GET, "/v1/session", bearer: flooding).status == 200)
                #expect(try await h.request(.POST, "/v1/session/token", bearer: other).status == 200)

                h.clock.advance(by: 10)
                #expect(try await h.request(.POST, "/v1/session/token", bearer: flooding).status == 200)
                #expect(try await h.request(.POST, "/v1/session/token", bearer: flooding).code == "rate_limited")
            }
        )
    }

    @Test("ORCHARD_RATE_LIMIT_PER_MINUTE=0 turns the sessions' budget off too")
    func zeroTurnsItOff() async throws {
        try await OrchardHarness.with(
            configure: { $0.listener.rateLimitPerMinute = 0 },
            { h in
                let session = try await h.signUp(h.emulator.makeUser())
                for _ in 0..<30 { #expect(try await h.request(.POST, "/v1/session/token", bearer: session).status == 200) }
            }
        )
    }

    @Test("DELETE /v1/sessions with no other live session commits nothing and announces nothing")
    func endingNothingCostsNothing() async throws {
        let counting = Mutex<CountingDatabaseClient?>(nil)
        try await OrchardHarness.with(
            wrapDatabase: { base in
                let client = CountingDatabaseClient(base)
                counting.withLock { $0 = client }
                return client
            },
            // No background pass runs beside the request: every statement counted is the request's own.
            jobs: .byTest,
            { h in
                let database = try #require(counting.withLock { $0 })
                let user = h.emulator.makeUser()
                let caller = try await h.signUp(user)
                let ended = try await h.signUp(user)
                #expect(try await h.request(.DELETE, "/v1/session", bearer: ended).status == 204)
                database.reset()
                let answer = try await h.request(.DELETE, "/v1/sessions", bearer: caller)
                #expect(answer.status == 200)
                #expect(answer.json["ended"] as? Int == 0)
                #expect(database.sent.allSatisfy { $0.uppercased().hasPrefix("SELECT") }, "\(database.sent.joined(separator: "\n"))")
                #expect(database.statements == database.sent.count, "no transaction was opened: \(database.sent)")
                #expect(!database.sent.contains { $0.contains("pg_notify") })
            }
        )
    }

    @Test("ending one's own session from the list with the cookie clears the site, as a sign-out does; another's does not")
    func ownSessionFromTheListClearsTheSite() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let first = try await h.signUp(user, device: "first")
            let second = try await h.signUp(user, device: "second")
            let listed = try await h.request(.GET, "/v1/sessions", bearer: second)
            let sessions = try #require(listed.json["sessions"] as? [[String: Any]])
            let secondID = try #require(sessions.first { $0["current"] as? Bool == true }?["id"] as? String)
            let firstID = try #require(sessions.first { $0["current"] as? Bool == false }?["id"] as? String)

            let cookie = [("Cookie", "__Host-orchard_session=\(second)")]
            let other = try await h.request(.DELETE, "/v1/sessions/\(firstID)", headers: cookie)
            #expect(other.status == 204)
            #expect(other.header("Clear-Site-Data") == nil, "ending another device's session keeps this browser's")
            #expect(try await h.request(.GET, "/v1/session", bearer: first).code == "session_revoked")

            let own = try await h.request(.DELETE, "/v1/sessions/\(secondID)", headers: cookie)
            #expect(own.status == 204)
            #expect(own.header("Clear-Site-Data") == #""cookies", "storage""#)
            #expect(own.clearsCookie("__Host-orchard_session"))
            let again = try await h.request(.GET, "/v1/session", bearer: second)
            #expect(again.code == "session_revoked" && again["reason"] == "signed_out")

            // With a bearer token, ending one's own session clears nothing (it would sign sibling sites out).
            let third = try await h.signUp(user)
            let thirdID = try #require(try await DeviceSessionsTests.sessions(h, third).first { $0["current"] as? Bool == true }?["id"] as? String)
            let bearer = try await h.request(.DELETE, "/v1/sessions/\(thirdID)", bearer: third)
            #expect(bearer.status == 204)
            #expect(bearer.header("Clear-Site-Data") == nil)
        }
    }
}
