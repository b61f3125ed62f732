import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

@Suite("Sessions through the HTTP API")
struct SessionTests {
    @Test("a session answers GET /v1/session until sign-out, then session_revoked signed_out; Apple is not called")
    func introspectAndSignOut() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let signIn = try await h.signIn(user).response
            let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)

            let shown = try await h.request(.GET, "/v1/session", bearer: token)
            #expect(shown.status == 200)
            #expect((shown.json["account"] as? [String: Any])?["apple_sub"] as? String == user.sub)
            // The session check writes its dates itself; they read as every other answer's, which the encoder's
            // date strategy writes (the sign-in's expires_at is the same instant).
            let shownSession = try #require(shown.json["session"] as? [String: Any])
            let signedInSession = try #require(signIn.json["session"] as? [String: Any])
            let expiresAt = try #require(shownSession["expires_at"] as? String)
            #expect(expiresAt == signedInSession["expires_at"] as? String)
            #expect(expiresAt.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z/) != nil, "\(expiresAt)")
            let account = try #require(shown.json["account"] as? [String: Any])
            #expect(account["name"] == nil, "a user who gave no name has no name key")
            #expect((account["created_at"] as? String)?.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z/) != nil)
            #expect(account["created_at"] as? String == (signIn.json["account"] as? [String: Any])?["created_at"] as? String)

            h.emulator.clearCalls()
            let signOut = try await h.request(.DELETE, "/v1/session", bearer: token)
            #expect(signOut.status == 204)
            #expect(h.emulator.calls().isEmpty)

            let after = try await h.request(.GET, "/v1/session", bearer: token)
            #expect(after.status == 401)
            #expect(after.code == "session_revoked")
            #expect(after["reason"] == "signed_out")
        }
    }

    @Test("the session check shows the account exactly as the sign-in answered it, name and email included")
    func answerMatchesSignIn() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let details: [String: any Sendable] = ["name": ["first_name": "Ada", "last_name": "Lovelace"] as [String: any Sendable]]
            let signIn = try await h.signIn(user, userDetails: details).response
            #expect(signIn.status == 200)
            let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
            let shown = try await h.request(.GET, "/v1/session", bearer: token)
            #expect(shown.status == 200)
            let signedIn = try #require(signIn.json["account"] as? [String: Any])
            let account = try #require(shown.json["account"] as? [String: Any])
            #expect(NSDictionary(dictionary: account) == NSDictionary(dictionary: signedIn), "\(account) against \(signedIn)")
            #expect((account["name"] as? [String: Any])?["first_name"] as? String == "Ada")
            #expect(account["email"] as? String == user.email)
            #expect(Set(shown.json.keys) == ["session", "account"])
            #expect(Set((shown.json["session"] as? [String: Any])?.keys.map { $0 } ?? []) == ["created_at", "expires_at"])
        }
    }

    @Test("no token, an unknown token, and a token past ORCHARD_SESSION_TTL are session_invalid")
    func invalidSessions() async throws {
        try await OrchardHarness.with(
            configure: { $0.lifecycle.sessionTTL = .seconds(3600) },
            { h in
                #expect(try await h.request(.GET, "/v1/session").code == "session_invalid")
                #expect(try await h.request(.GET, "/v1/session", bearer: "unknown-token").code == "session_invalid")
                #expect(try await h.request(.DELETE, "/v1/session", bearer: "unknown-token").status == 401)
                let signIn = try await h.signIn(h.emulator.makeUser()).response
                let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
                #expect(try await h.request(.GET, "/v1/session", bearer: token).status == 200)
                // The scheme is case-insensitive and spaces around the token do not matter; other schemes are no session.
                for field in ["bearer \(token)", "BEARER  \(token) ", "Bearer \t\(token)"] {
                    #expect(try await h.request(.GET, "/v1/session", headers: [("Authorization", field)]).status == 200, "\(field)")
                }
                for field in ["Basic \(token)", "Bearer\(token)", "Bearers \(token)", "Bearer ", token] {
                    #expect(try await h.request(.GET, "/v1/session", headers: [("Authorization", field)]).code == "session_invalid", "\(field)")
                }
                h.clock.advance(by: 3601)
                let expired = try await h.request(.GET, "/v1/session", bearer: token)
                #expect(expired.status == 401)
                #expect(expired.code == "session_invalid")
            }
        )
    }

    @Test("the session token is stored only as its hash")
    func tokenHashed() async throws {
        try await OrchardHarness.with { h in
            let signIn = try await h.signIn(h.emulator.makeUser()).response
            let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
            let files = try await h.databaseBytes()
            for file in files {
                #expect(file.bytes.range(of: Data(token.utf8)) == nil, "session token found in \(file.name)")
            }
        }
    }

    @Test("concurrent checks of many users each answer their own account; an ended and an unknown token among them are refused")
    func concurrentChecks() async throws {
        try await OrchardHarness.with { h in
            var subs: [String: String] = [:]
            for _ in 0..<12 {
                let user = h.emulator.makeUser()
                subs[try await h.signUp(user)] = user.sub
            }
            let ended = try await h.signUp(h.emulator.makeUser())
            #expect(try await h.request(.DELETE, "/v1/session", bearer: ended).status == 204)
            let tokens = Array(subs.keys) + [ended, "unknown-token"]
            let answers = try await withThrowingTaskGroup(of: (String, Int, String?, String?).self) { group in
                for _ in 0..<4 {
                    for token in tokens.shuffled() {
                        group.addTask {
                            let answer = try await h.request(.GET, "/v1/session", bearer: token)
                            let sub = (answer.json["account"] as? [String: Any])?["apple_sub"] as? String
                            return (token, answer.status, answer.code, sub)
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.count == tokens.count * 4)
            for (token, status, code, sub) in answers {
                switch token {
                case ended:
                    #expect(status == 401)
                    #expect(code == "session_revoked")
                case "unknown-token":
                    #expect(status == 401)
                    #expect(code == "session_invalid")
                default:
                    #expect(status == 200)
                    #expect(sub == subs[token], "a check answered another user's account")
                }
            }
        }
    }
}
