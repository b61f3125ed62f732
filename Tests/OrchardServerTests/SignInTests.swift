import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

@Suite("Sign-in through the HTTP API against the emulator")
struct SignInTests {
    @Test("a new user signs in: 200, a session, the account from the first authorization, the code exchanged once")
    func newAccount() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser(firstName: "Ada", lastName: "Lovelace")
            let (response, authorization, _) = try await h.signIn(
                user,
                userDetails: ["name": ["first_name": "Ada", "last_name": "Lovelace"], "email": "ignored@example.com"]
            )
            #expect(response.status == 200)
            #expect(response.json["is_new_account"] as? Bool == true)
            let account = try #require(response.json["account"] as? [String: Any])
            #expect(account["apple_sub"] as? String == user.sub)
            #expect(account["email"] as? String == user.email)  // the signed token wins over the app's email
            #expect(account["apple_credential"] as? String == "valid")
            #expect(account["email_forwarding"] as? String == "enabled")
            #expect((account["name"] as? [String: Any])?["first_name"] as? String == "Ada")
            #expect((account["id"] as? String)?.hasPrefix("acct_") == true)
            #expect(account["last_validated_at"] is String)
            let session = try #require(response.json["session"] as? [String: Any])
            #expect((session["token"] as? String)?.count ?? 0 >= 43)
            let exchanges = h.emulator.calls(to: .token)
            #expect(exchanges.count == 1)
            #expect(exchanges.first?.code == authorization.authorizationCode)
            #expect(exchanges.first?.grantType == "authorization_code")
        }
    }

    @Test("an email the app sends is never stored: with no email in Apple's signed tokens, the account has none")
    func appSuppliedEmailIgnored() async throws {
        try await OrchardHarness.with { h in
            let user = EmulatedUser(sub: EmulatedUser.makeSubject(), email: nil, isPrivateEmail: false)
            let (response, _, _) = try await h.signIn(user, userDetails: ["email": "victim@example.com"])
            #expect(response.status == 200)
            let account = try #require(response.json["account"] as? [String: Any])
            #expect(account["email"] == nil, "an unsigned email reached the account")
            #expect(account["is_private_email"] as? Bool == false)
            let token = try #require((response.json["session"] as? [String: Any])?["token"] as? String)
            let session = try await h.request(.GET, "/v1/session", bearer: token)
            #expect((session.json["account"] as? [String: Any])?["email"] == nil)
        }
    }

    @Test("is_private_email is the token's claim whatever the relay domain: private.icloud.com is private, a lookalike is not")
    func privateEmailFromTheClaim() async throws {
        try await OrchardHarness.with { h in
            let newer = h.emulator.makeUser(relayDomain: EmulatedUser.newerPrivateRelayDomain)
            let (answer, _, _) = try await h.signIn(newer)
            let account = try #require(answer.json["account"] as? [String: Any])
            #expect((account["email"] as? String)?.hasSuffix("@private.icloud.com") == true)
            #expect(account["is_private_email"] as? Bool == true)
            // An address that merely looks like a relay one, with the claim false, is not private.
            let lookalike = h.emulator.makeUser(email: "someone@privaterelay.appleid.com.example", isPrivateEmail: false)
            let (shown, _, _) = try await h.signIn(lookalike)
            #expect((shown.json["account"] as? [String: Any])?["is_private_email"] as? Bool == false)
        }
    }

    @Test("a returning user keeps the first authorization's name and gets a new session")
    func returningAccount() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let first = try await h.signIn(user, userDetails: ["name": ["first_name": "Grace", "last_name": "Hopper"]]).response
            let second = try await h.signIn(user, userDetails: ["name": ["first_name": "Mallory"]]).response
            #expect(second.status == 200)
            #expect(second.json["is_new_account"] as? Bool == false)
            let firstAccount = try #require(first.json["account"] as? [String: Any])
            let secondAccount = try #require(second.json["account"] as? [String: Any])
            #expect(secondAccount["id"] as? String == firstAccount["id"] as? String)
            #expect((secondAccount["name"] as? [String: Any])?["first_name"] as? String == "Grace")
            #expect(h.counted("orchard_sign_ins_total", [("outcome", "new_account")]) == 1)
            #expect(h.counted("orchard_sign_ins_total", [("outcome", "returning")]) == 1)
            let firstToken = (first.json["session"] as? [String: Any])?["token"] as? String
            let secondToken = (second.json["session"] as? [String: Any])?["token"] as? String
            #expect(firstToken != secondToken)
        }
    }

    @Test("the raw nonce in the token is accepted as well as its SHA-256")
    func rawNonce() async throws {
        try await OrchardHarness.with { h in
            let response = try await h.signIn(h.emulator.makeUser(), nonceMode: .raw).response
            #expect(response.status == 200)
        }
    }

    @Test("the same request replayed is refused with nonce_reused, and Apple sees one exchange")
    func replay() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let nonce = try await h.issueNonce()
            let authorization = try h.emulator.authorize(user: user, clientID: OrchardHarness.clientID, nonce: OrchardHarness.hashNonce(nonce))
            let body: [String: any Sendable] = [
                "identity_token": authorization.identityToken, "authorization_code": authorization.authorizationCode, "nonce": nonce,
            ]
            #expect(try await h.request(.POST, "/v1/auth/apple", json: body).status == 200)
            let replayed = try await h.request(.POST, "/v1/auth/apple", json: body)
            #expect(replayed.status == 401)
            #expect(replayed.code == "nonce_reused")
            #expect(h.emulator.calls(to: .token).count == 1)
        }
    }

    @Test("a used nonce with a fresh authorization code is still nonce_reused")
    func nonceReusedWithFreshCode() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let (first, _, nonce) = try await h.signIn(user)
            #expect(first.status == 200)
            let again = try h.emulator.authorize(user: user, clientID: OrchardHarness.clientID, nonce: OrchardHarness.hashNonce(nonce))
            let response = try await h.request(
                .POST,
                "/v1/auth/apple",
                json: ["identity_token": again.identityToken, "authorization_code": again.authorizationCode, "nonce": nonce]
            )
            #expect(response.status == 401)
            #expect(response.code == "nonce_reused")
        }
    }

    @Test("a nonce Orchard never issued, or an expired one, is nonce_mismatch; a token without one is nonce_missing")
    func nonceRules() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let forged = "not-issued-by-orchard"
            let authorization = try h.emulator.authorize(user: user, clientID: OrchardHarness.clientID, nonce: OrchardHarness.hashNonce(forged))
            let neverIssued = try await h.request(
                .POST,
                "/v1/auth/apple",
                json: ["identity_token": authorization.identityToken, "authorization_code": authorization.authorizationCode, "nonce": forged]
            )
            #expect(neverIssued.status == 401)
            #expect(neverIssued.code == "nonce_mismatch")

            let issued = try await h.issueNonce()
            let other = try h.emulator.authorize(user: user, clientID: OrchardHarness.clientID, nonce: OrchardHarness.hashNonce("something else"))
            let mismatch = try await h.request(
                .POST,
                "/v1/auth/apple",
                json: ["identity_token": other.identityToken, "authorization_code": other.authorizationCode, "nonce": issued]
            )
            #expect(mismatch.code == "nonce_mismatch")

            let noNonce = try h.emulator.authorize(user: user, clientID: OrchardHarness.clientID, nonce: nil)
            let missing = try await h.request(
                .POST,
                "/v1/auth/apple",
                json: ["identity_token": noNonce.identityToken, "authorization_code": noNonce.authorizationCode, "nonce": issued]
            )
            #expect(missing.status == 401)
            #expect(missing.code == "nonce_missing")

            let late = try await h.issueNonce()
            h.clock.advance(by: 601)
            let expired = try h.emulator.authorize(user: user, clientID: OrchardHarness.clientID, nonce: OrchardHarness.hashNonce(late))
            let tooLate = try await h.request(
                .POST,
                "/v1/auth/apple",
                json: ["identity_token": expired.identityToken, "authorization_code": expired.authorizationCode, "nonce": late]
            )
            #expect(tooLate.code == "nonce_mismatch")
            #expect(h.emulator.calls(to: .token).isEmpty)
        }
    }

    @Test("a code Apple refuses gives authorization_code_rejected and leaves no account row")
    func codeRefused() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let nonce = try await h.issueNonce()
            let authorization = try h.emulator.authorize(user: user, clientID: OrchardHarness.clientID, nonce: OrchardHarness.hashNonce(nonce))
            let response = try await h.request(
                .POST,
                "/v1/auth/apple",
                json: ["identity_token": authorization.identityToken, "authorization_code": "c.not-a-real-code", "nonce": nonce]
            )
            #expect(response.status == 401)
            #expect(response.code == "authorization_code_rejected")
            #expect(try await h.accounts.listAccounts().isEmpty)
        }
    }

    @Test("Apple down gives 503 apple_unavailable and nothing is stored; Apple refusing our client gives 502")
    func appleDown() async throws {
        try await OrchardHarness.with { h in
            h.emulator.injectFailure(endpoint: .token, failure: .status(503), count: 1)
            let down = try await h.signIn(h.emulator.makeUser()).response
            #expect(down.status == 503)
            #expect(down.code == "apple_unavailable")
            #expect(down.header("Content-Type") == "application/problem+json")

            h.emulator.injectFailure(endpoint: .token, failure: .appleError("invalid_client"), count: 1)
            let rejected = try await h.signIn(h.emulator.makeUser()).response
            #expect(rejected.status == 502)
            #expect(rejected.code == "apple_client_rejected")
            #expect(h.counted("orchard_sign_ins_total", [("outcome", "apple_unavailable")]) == 1)
            #expect(h.counted("orchard_sign_ins_total", [("outcome", "apple_client_rejected")]) == 1)
            #expect(h.counted("orchard_sign_ins_total") == 2)
            #expect(try await h.accounts.listAccounts().isEmpty)
        }
    }

    @Test("Apple's keys unreachable with none cached gives 503 apple_unavailable; the first sign-in after recovery succeeds")
    func keysDown() async throws {
        try await OrchardHarness.with { h in
            h.emulator.injectFailure(endpoint: .keys, failure: .status(500), count: 2)
            for _ in 0..<2 {
                let response = try await h.signIn(h.emulator.makeUser()).response
                #expect(response.status == 503)
                #expect(response.code == "apple_unavailable")
            }
            // No waiting out the once-a-minute refetch limit: with nothing cached, Orchard asks again at once.
            let recovered = try await h.signIn(h.emulator.makeUser()).response
            #expect(recovered.status == 200)
            #expect(h.emulator.calls(to: .keys).count == 3)
        }
    }

    @Test("an expired identity token, a foreign audience and a client_id that is not the token's aud are refused")
    func tokenRules() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let nonce = try await h.issueNonce()
            let authorization = try h.emulator.authorize(user: user, clientID: OrchardHarness.clientID, nonce: OrchardHarness.hashNonce(nonce))
            let mismatch = try await h.request(
                .POST,
                "/v1/auth/apple",
                json: [
                    "identity_token": authorization.identityToken, "authorization_code": authorization.authorizationCode,
                    "nonce": nonce, "client_id": OrchardHarness.webClientID,
                ]
            )
            #expect(mismatch.status == 401)
            #expect(mismatch.code == "identity_token_audience")

            h.clock.advance(by: 86_400 + 61)
            let expired = try await h.request(
                .POST,
                "/v1/auth/apple",
                json: ["identity_token": authorization.identityToken, "authorization_code": authorization.authorizationCode, "nonce": nonce]
            )
            #expect(expired.code == "identity_token_expired")

            let garbage = try await h.request(
                .POST,
                "/v1/auth/apple",
                json: ["identity_token": "abc.def", "authorization_code": "x", "nonce": nonce]
            )
            #expect(garbage.code == "identity_token_malformed")
        }
    }
}
