import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

@Suite("Work & School accounts (Managed Apple Accounts): org_id, email_verified, an empty email")
struct WorkAndSchoolTests {
    static func account(_ h: OrchardHarness, _ token: String) async throws -> [String: Any] {
        let answer = try await h.request(.GET, "/v1/session", bearer: token)
        #expect(answer.status == 200)
        return try #require(answer.json["account"] as? [String: Any])
    }

    @Test("a student's token with org_id, an empty email and email_verified false signs in with no email; org_id is in ACCOUNT and the access token")
    func student() async throws {
        try await OrchardHarness.with { h in
            let student = h.emulator.makeUser(email: "", isPrivateEmail: false, emailVerified: false, orgID: "org_7f3a9c")
            let session = try await h.signUp(student)
            let account = try await Self.account(h, session)
            #expect(account["org_id"] as? String == "org_7f3a9c")
            #expect(account["email_verified"] as? Bool == false)
            #expect(account.keys.contains("email") == false, "an empty email is no email: \(account)")

            let token = try await AccessTokenTests.token(h, session)
            let claims = try AccessTokenTests.parts(token).claims
            #expect(claims["org_id"] as? String == "org_7f3a9c")
            #expect(Set(claims.keys) == ["iss", "sub", "sid", "client_id", "aud", "iat", "nbf", "exp", "jti", "org_id"])
        }
    }

    /// Sign-in finds accounts by Apple's `sub` only, so no line of the code guards "never matches" today: this test pins
    /// that behaviour against an email-matching sign-in added later.
    @Test("a consumer account has no org_id and a verified email; an unverified email is shown as such and never matches another account")
    func unverifiedNeverMatches() async throws {
        try await OrchardHarness.with { h in
            let owner = h.emulator.makeUser(email: "ada@example.com", isPrivateEmail: false)
            let ownerSession = try await h.signUp(owner)
            let shown = try await Self.account(h, ownerSession)
            #expect(shown["email_verified"] as? Bool == true)
            #expect(shown.keys.contains("org_id") == false)

            let claimant = h.emulator.makeUser(email: "ada@example.com", isPrivateEmail: false, emailVerified: false, orgID: "org_other")
            let claimantSession = try await h.signUp(claimant)
            let claimed = try await Self.account(h, claimantSession)
            #expect(claimed["id"] as? String != shown["id"] as? String, "an unverified email matched another account")
            #expect(claimed["email"] as? String == "ada@example.com")
            #expect(claimed["email_verified"] as? Bool == false)
            #expect(try await h.rowCount("accounts") == 2)
            // The access token of a consumer account has no org_id.
            let claims = try AccessTokenTests.parts(try await AccessTokenTests.token(h, ownerSession)).claims
            #expect(claims["org_id"] == nil)
        }
    }

    @Test("email_verified moves only with its email: an unverified address stays unverified after a token that carries no email")
    func verifiedOnlyWithItsEmail() async throws {
        try await OrchardHarness.with { h in
            // An organisation's admin puts an unverified address on a Managed Apple Account...
            var managed = h.emulator.makeUser(email: "victim@example.com", isPrivateEmail: false, emailVerified: false, orgID: "org_admin")
            let first = try await h.signUp(managed)
            let before = try await Self.account(h, first)
            #expect(before["email"] as? String == "victim@example.com")
            #expect(before["email_verified"] as? Bool == false)
            // ...then clears it: the next token carries no email and no email_verified.
            managed.email = nil
            let second = try await h.signUp(managed)
            let after = try await Self.account(h, second)
            #expect(after["id"] as? String == before["id"] as? String)
            #expect(after["email"] as? String == "victim@example.com", "a token without an email leaves the stored one")
            #expect(after["email_verified"] as? Bool == false, "the stored unverified email was shown verified: \(after)")
        }
    }

    @Test("an email without an email_verified claim is unverified for an account with an org_id, verified for a consumer's")
    func absentClaimByKindOfAccount() async throws {
        try await OrchardHarness.with { h in
            for (orgID, expected) in [("org_absent", false), (nil, true)] as [(String?, Bool)] {
                let user = h.emulator.makeUser(email: "someone-\(expected)@example.com", isPrivateEmail: false, orgID: orgID)
                let nonce = try await h.issueNonce()
                let authorization = try h.emulator.authorize(user: user, clientID: OrchardHarness.clientID, nonce: OrchardHarness.hashNonce(nonce))
                var claims = h.emulator.identityTokenClaims(
                    user: user,
                    clientID: OrchardHarness.clientID,
                    nonce: OrchardHarness.hashNonce(nonce),
                    authorizationCode: authorization.authorizationCode
                )
                claims["email_verified"] = nil
                let token = try h.emulator.signIdentityToken(claims: claims)
                let answer = try await h.request(
                    .POST,
                    "/v1/auth/apple",
                    json: ["identity_token": token, "authorization_code": authorization.authorizationCode, "nonce": nonce]
                )
                #expect(answer.status == 200)
                let account = try #require(answer.json["account"] as? [String: Any])
                #expect(account["email_verified"] as? Bool == expected, "org_id \(orgID ?? "none"): \(account)")
            }
        }
    }
}
