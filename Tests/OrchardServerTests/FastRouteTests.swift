import Accounts
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

/// The fast tier: `serve`'s own router driven in process (HummingbirdTesting's router mode) over the in-memory store and
/// a scripted Apple. What a route decides (its policy, the request it refuses, the problem it answers, what it leaves in
/// the store) in milliseconds, without a socket or a database; the same rules through real parts are in the suites
/// beside this one (SignInTests, SessionTests, CookieSessionTests, SessionBudgetTests, DeletionTests, HTTPHygieneTests).
@Suite("Fast tier: the public routes in process, over the in-memory store", .backendIndependent)
struct FastRouteTests {
    static func token(_ response: TestResponse) throws -> String {
        try #require((response.json["session"] as? [String: Any])?["token"] as? String, "\(response.status)")
    }

    @Test("a sign-in: 200 with a session, the code exchanged once, Apple's tokens sealed in the store; a returning user is no new account")
    func signIn() async throws {
        try await InProcessOrchard.with { o in
            let first = try await o.signIn(sub: "001.fast.1", email: "ada@example.com")
            #expect(first.status == 200)
            #expect(first.json["is_new_account"] as? Bool == true)
            let account = try #require(first.json["account"] as? [String: Any])
            #expect(account["apple_sub"] as? String == "001.fast.1")
            #expect(account["email"] as? String == "ada@example.com")
            #expect(account["apple_credential"] as? String == "valid")
            #expect(o.apple.exchanged.count == 1)
            let stored = try #require(o.store.edit { $0.accounts.values.first })
            let sealed = try #require(stored.sealedRefreshToken)
            #expect(!sealed.contains("rt-code"), "the refresh token is stored sealed")

            let again = try await o.signIn(sub: "001.fast.1")
            #expect(again.status == 200)
            #expect(again.json["is_new_account"] as? Bool == false)
            #expect((again.json["account"] as? [String: Any])?["id"] as? String == account["id"] as? String)
            #expect(o.store.edit { $0.accounts.count } == 1)
            #expect(o.store.edit { $0.sessions.count } == 2)
        }
    }

    @Test("a sign-in Apple or the nonce refuses answers the contract's code and stores no account")
    func signInRefusals() async throws {
        try await InProcessOrchard.with { o in
            func attempt(nonce: String?, claimNonce: String?, audience: String = InProcessOrchard.clientID) async throws -> TestResponse {
                var body: [String: any Sendable] = [
                    "identity_token": o.apple.identityToken(sub: "001.fast.2", nonce: claimNonce, audience: audience),
                    "authorization_code": "code-refused",
                    "client_id": InProcessOrchard.clientID,
                ]
                if let nonce { body["nonce"] = nonce }
                return try await o.request(.POST, "/v1/auth/apple", json: body)
            }
            let issued = try #require(try await o.request(.POST, "/v1/auth/apple/nonce")["nonce"])
            #expect(try await attempt(nonce: "never-issued", claimNonce: "never-issued").code == "nonce_mismatch")
            #expect(try await attempt(nonce: issued, claimNonce: nil).code == "nonce_missing")
            #expect(try await attempt(nonce: issued, claimNonce: "another").code == "nonce_mismatch")
            let foreign = try await attempt(nonce: issued, claimNonce: issued, audience: "com.example.other")
            #expect(foreign.status == 401)
            #expect(foreign.code == "identity_token_audience")
            let forged = try await o.request(
                .POST,
                "/v1/auth/apple",
                json: ["identity_token": "a.b.c", "authorization_code": "x", "nonce": issued]
            )
            #expect(forged.code == "identity_token_signature")
            #expect(o.apple.exchanged.isEmpty, "nothing refused before the exchange reached Apple")

            for (answer, status, code) in [
                (ScriptedAppleGateway.Answer.invalidGrant, 401, "authorization_code_rejected"),
                (.unavailable, 503, "apple_unavailable"),
                (.clientRejected, 502, "apple_client_rejected"),
            ] {
                o.apple.exchanges(answer: answer)
                let refused = try await o.signIn(sub: "001.fast.2")
                #expect(refused.status == status, "\(answer)")
                #expect(refused.code == code, "\(answer)")
                #expect(refused.header("Content-Type") == "application/problem+json")
            }
            #expect(o.store.edit { $0.accounts.isEmpty && $0.sessions.isEmpty })

            // The nonce is consumed once the token passes: the same request again is nonce_reused.
            o.apple.exchanges(answer: .accepted)
            let nonce = try #require(try await o.request(.POST, "/v1/auth/apple/nonce")["nonce"])
            let body: [String: any Sendable] = [
                "identity_token": o.apple.identityToken(sub: "001.fast.2", nonce: nonce, audience: InProcessOrchard.clientID),
                "authorization_code": "code-once",
                "nonce": nonce,
            ]
            #expect(try await o.request(.POST, "/v1/auth/apple", json: body).status == 200)
            #expect(try await o.request(.POST, "/v1/auth/apple", json: body).code == "nonce_reused")
            #expect(o.apple.exchanged.filter { $0 == "code-once" }.count == 1)
        }
    }

    @Test("bad JSON, a missing field and a wrong type are 400 invalid_request; an unknown path 404; a wrong method 405 with Allow")
    func problems() async throws {
        try await InProcessOrchard.with { o in
            let notJSON = try await o.request(.POST, "/v1/auth/apple", body: Data("{nope".utf8), headers: [("Content-Type", "application/json")])
            #expect(notJSON.status == 400)
            #expect(notJSON.code == "invalid_request")
            #expect(notJSON["type"] == "urn:orchard:error:invalid_request")
            #expect(notJSON.json["status"] as? Int == 400)
            #expect(notJSON.header("Content-Type") == "application/problem+json")
            #expect(notJSON.header("Cache-Control") == "no-store")
            let wrongType = try await o.request(.POST, "/v1/auth/apple", json: ["identity_token": 5, "authorization_code": "x"])
            #expect(wrongType["detail"] == "field 'identity_token' must be a string")
            let missing = try await o.request(.POST, "/v1/auth/apple", json: ["identity_token": "a.b.c"])
            #expect(missing["detail"]?.contains("authorization_code") == true)
            let device = try await o.signIn(sub: "001.fast.3", device: String(repeating: "x", count: 65))
            #expect(device.code == "invalid_request")

            let unknown = try await o.request(.GET, "/v1/nothing-here")
            #expect(unknown.status == 404)
            #expect(unknown.code == "not_found")
            let wrong = try await o.request(.GET, "/v1/auth/apple")
            #expect(wrong.status == 405)
            #expect(wrong.code == "method_not_allowed")
            #expect(wrong.header("Allow") == "POST")
            #expect(try await o.request(.PUT, "/v1/session").code == "method_not_allowed")
            #expect(o.store.edit { $0.accounts.isEmpty })
        }
    }

    @Test("the session check until sign-out, then session_revoked signed_out; no token, an unknown one and an expired one are session_invalid")
    func sessions() async throws {
        let hourLongSessions: (inout OrchardConfiguration) -> Void = { $0.lifecycle.sessionTTL = .seconds(3600) }
        try await InProcessOrchard.with(configure: hourLongSessions) { o in
            #expect(try await o.request(.GET, "/v1/session").code == "session_invalid")
            #expect(try await o.request(.GET, "/v1/session", bearer: "unknown-token").code == "session_invalid")
            let token = try await o.signUp("001.fast.4")
            let shown = try await o.request(.GET, "/v1/session", bearer: token)
            #expect(shown.status == 200)
            #expect(Set(shown.json.keys) == ["session", "account"])
            for field in ["Basic \(token)", "Bearer\(token)", "Bearer "] {
                #expect(try await o.request(.GET, "/v1/session", headers: [("Authorization", field)]).code == "session_invalid", "\(field)")
            }
            let spelled = try await o.request(.GET, "/v1/session", headers: [("Authorization", "bEaReR \t\(token)\t ")])
            #expect(spelled.status == 200, "the scheme in any case, spaces and tabs around the token")
            // Two Authorization fields are one value, joined with ", " (never the first alone), and no token.
            let twice = [("Authorization", "Bearer \(token)"), ("Authorization", "Bearer \(token)")]
            #expect(try await o.request(.GET, "/v1/session", headers: twice).code == "session_invalid")
            let later = try await o.signUp("001.fast.4")
            #expect(try await o.request(.DELETE, "/v1/session", bearer: token).status == 204)
            let ended = try await o.request(.GET, "/v1/session", bearer: token)
            #expect(ended.status == 401)
            #expect(ended.code == "session_revoked")
            #expect(ended["reason"] == "signed_out")
            #expect(try await o.request(.GET, "/v1/session", bearer: later).status == 200, "another session of the account lives on")
            o.clock.advance(by: 3601)
            #expect(try await o.request(.GET, "/v1/session", bearer: later).code == "session_invalid")
            #expect(o.apple.revoked.isEmpty, "signing out touches nothing at Apple")
        }
    }

    @Test("another account's session id is not_found exactly as an unknown one; DELETE /v1/sessions keeps the caller's and other accounts'")
    func deviceSessions() async throws {
        try await InProcessOrchard.with { o in
            let phone = try await o.signUp("001.fast.5", device: "phone")
            let laptop = try await o.signUp("001.fast.5", device: "laptop")
            let stranger = try await o.signUp("001.fast.6")
            let listed = try await o.request(.GET, "/v1/sessions", bearer: stranger)
            let strangersID = try #require((listed.json["sessions"] as? [[String: Any]])?.first?["id"] as? String)
            let foreign = try await o.request(.DELETE, "/v1/sessions/\(strangersID)", bearer: phone)
            let unknown = try await o.request(.DELETE, "/v1/sessions/sess_00000000000000000000000000000000", bearer: phone)
            #expect(foreign.status == 404 && unknown.status == 404)
            #expect(foreign.code == unknown.code && foreign["detail"] == unknown["detail"])
            #expect(try await o.request(.DELETE, "/v1/sessions/not-an-id", bearer: phone).code == "not_found")

            let ended = try await o.request(.DELETE, "/v1/sessions", bearer: phone)
            #expect(ended.status == 200)
            #expect(ended.json["ended"] as? Int == 1)
            #expect(try await o.request(.GET, "/v1/session", bearer: laptop)["reason"] == "signed_out")
            #expect(try await o.request(.GET, "/v1/session", bearer: phone).status == 200)
            #expect(try await o.request(.GET, "/v1/session", bearer: stranger).status == 200)
        }
    }

    @Test("a cookie-authenticated DELETE from a foreign Origin is 403 csrf_rejected, this site's is not; a bearer is no CSRF case")
    func cookieRules() async throws {
        let site: (inout OrchardConfiguration) -> Void = { $0.webFlow.publicURL = URL(string: "https://orchard.test") }
        try await InProcessOrchard.with(configure: site) { o in
            let token = try await o.signUp("001.fast.7")
            let cookie = ("Cookie", "__Host-orchard_session=\(token)")
            for origin in ["https://evil.example", "null", "http://orchard.test", "https://orchard.test:8443"] {
                let refused = try await o.request(.DELETE, "/v1/account", headers: [cookie, ("Origin", origin)])
                #expect(refused.status == 403, "\(origin)")
                #expect(refused.code == "csrf_rejected", "\(origin)")
                #expect(refused.header("Clear-Site-Data") == nil)
            }
            #expect(o.store.edit { $0.accounts.count } == 1, "nothing was deleted")
            let bearer = try await o.request(
                .GET,
                "/v1/session",
                headers: [("Authorization", "Bearer \(token)"), ("Origin", "https://evil.example")]
            )
            #expect(bearer.status == 200)
            let signedOut = try await o.request(.DELETE, "/v1/session", headers: [cookie, ("Origin", "https://orchard.test")])
            #expect(signedOut.status == 204)
            #expect(signedOut.header("Clear-Site-Data") != nil)
        }
    }

    @Test("DELETE /v1/sessions, DELETE /v1/sessions/{id} and POST /v1/session/token share one budget per session, checked first")
    func sessionBudget() async throws {
        let fourAMinute: (inout OrchardConfiguration) -> Void = { $0.listener.rateLimitPerMinute = 4 }
        try await InProcessOrchard.with(configure: fourAMinute) { o in
            let flooding = try await o.signUp("001.fast.8")
            let other = try await o.signUp("001.fast.8")
            #expect(try await o.request(.DELETE, "/v1/sessions/sess_unknown", bearer: flooding).code == "not_found")
            for _ in 0..<3 { #expect(try await o.request(.POST, "/v1/session/token", bearer: flooding).status == 200) }
            let refused = try await o.request(.DELETE, "/v1/sessions", bearer: flooding)
            #expect(refused.status == 429)
            #expect(refused.code == "rate_limited")
            #expect(refused.header("Retry-After") == "15", "four a minute: a token every 15 seconds")
            #expect(try await o.request(.GET, "/v1/session", bearer: other).status == 200, "nothing ended")
            // Before the session lookup and the cookie's Origin rule.
            let cookie = try await o.request(
                .DELETE,
                "/v1/sessions",
                headers: [("Cookie", "__Host-orchard_session=\(flooding)"), ("Origin", "https://evil.example")]
            )
            #expect(cookie.code == "rate_limited")
            #expect(try await o.request(.GET, "/v1/session", bearer: flooding).status == 200, "the session check has no budget")
            #expect(try await o.request(.POST, "/v1/session/token", bearer: other).status == 200, "another session has its own")
            o.clock.advance(by: 15)
            #expect(try await o.request(.POST, "/v1/session/token", bearer: flooding).status == 200)
            #expect(try await o.request(.POST, "/v1/session/token", bearer: flooding).code == "rate_limited")
        }
    }

    @Test("DELETE /v1/account: the account and its sessions gone, Apple's refresh token revoked; without one, manual_required")
    func deletion() async throws {
        try await InProcessOrchard.with { o in
            let token = try await o.signUp("001.fast.9")
            let deleted = try await o.request(.DELETE, "/v1/account", bearer: token)
            #expect(deleted.status == 200)
            #expect(deleted["apple_revocation"] == "revoked")
            #expect(o.apple.revoked.map(\.token).allSatisfy { $0.hasPrefix("rt-code-") })
            #expect(o.apple.revoked.count == 1)
            #expect(o.store.edit { $0.accounts.isEmpty })
            let after = try await o.request(.GET, "/v1/session", bearer: token)
            #expect(after.status == 401)

            // Apple down: the deletion still happens, and the revocation waits in the outbox.
            o.apple.revocations(answer: .unavailable)
            let second = try await o.signUp("001.fast.10")
            let pending = try await o.request(.DELETE, "/v1/account", bearer: second)
            #expect(pending.status == 200)
            #expect(pending["apple_revocation"] == "pending")
            #expect(o.store.edit { $0.accounts.isEmpty && $0.revocations.count == 1 })
        }
    }
}
