import AppleIDEmulator
import Foundation
import NIOCore
import NIOHTTP1
import OrchardTesting
import Testing

@Suite("Refresh grants, /auth/revoke and grants revoked by the user")
struct RefreshAndRevokeTests {
    @Test("a refresh grant answers a new access token and id_token but no new refresh token")
    func refreshGrant() async throws {
        try await EmulatorHarness.with { h in
            let (user, tokens) = try await h.signIn()
            let refreshToken = try #require(tokens["refresh_token"])
            let refreshed = try await h.refresh(refreshToken)
            #expect(refreshed.status == 200)
            #expect(Set(refreshed.json.keys) == ["access_token", "token_type", "expires_in", "id_token"])
            #expect(refreshed["access_token"] != tokens["access_token"])
            #expect(refreshed["token_type"] == "bearer")
            let idToken = try EmulatorHarness.decode(try #require(refreshed["id_token"]))
            #expect(idToken.payload["sub"] as? String == user.sub)
            #expect(idToken.payload["aud"] as? String == EmulatorHarness.appID)
        }
    }

    @Test("after the user revokes the app in Apple ID settings, the refresh token is invalid_grant")
    func refreshAfterRevokeGrant() async throws {
        try await EmulatorHarness.with { h in
            let (user, tokens) = try await h.signIn()
            let refreshToken = try #require(tokens["refresh_token"])
            #expect(h.emulator.revokeGrant(sub: user.sub, clientID: EmulatorHarness.appID) == 1)
            let refused = try await h.refresh(refreshToken)
            #expect(refused.status == 400)
            #expect(refused.error == "invalid_grant")
            #expect(h.emulator.isRevoked(token: refreshToken))
            #expect(h.emulator.isRevoked(token: try #require(tokens["access_token"])))
            #expect(h.emulator.revokedTokens().isEmpty)
        }
    }

    @Test("revoking a grant kills its unused codes, and the next authorization is a first one again")
    func revokeGrantResetsAuthorization() async throws {
        try await EmulatorHarness.with { h in
            let user = h.emulator.makeUser()
            let first = try h.emulator.authorize(user: user, clientID: EmulatorHarness.appID)
            #expect(first.isFirstAuthorization)
            let second = try h.emulator.authorize(user: user, clientID: EmulatorHarness.appID)
            #expect(!second.isFirstAuthorization)
            h.emulator.revokeGrant(sub: user.sub)
            #expect(try await h.exchange(code: second.authorizationCode).error == "invalid_grant")
            let third = try h.emulator.authorize(user: user, clientID: EmulatorHarness.appID)
            #expect(third.isFirstAuthorization)
            #expect(try await h.exchange(code: third.authorizationCode).status == 200)
        }
    }

    @Test("revoking a refresh token answers 200 with an empty body, ends the grant, and is counted once as valid")
    func revokeRefreshToken() async throws {
        try await EmulatorHarness.with { h in
            let (_, tokens) = try await h.signIn()
            let refreshToken = try #require(tokens["refresh_token"])
            let revoked = try await h.revoke(refreshToken)
            #expect(revoked.status == 200)
            #expect(revoked.body.isEmpty)
            #expect(h.emulator.isRevoked(token: refreshToken))
            #expect(try await h.refresh(refreshToken).error == "invalid_grant")

            let again = try await h.revoke(refreshToken)
            #expect(again.status == 200)
            #expect(again.body.isEmpty)
            #expect(h.emulator.revocationCount(token: refreshToken) == EmulatorRevocationCount(whileValid: 1, whileInvalid: 1))
            #expect(h.emulator.revokedTokens() == [refreshToken])
            #expect(h.emulator.revocations().map(\.wasValid) == [true, false])
            #expect(h.emulator.revocations().first?.tokenTypeHint == "refresh_token")
        }
    }

    @Test("revoking the access token ends the whole grant: the refresh token stops working too")
    func revokeAccessToken() async throws {
        try await EmulatorHarness.with { h in
            let (_, tokens) = try await h.signIn()
            let accessToken = try #require(tokens["access_token"])
            let refreshToken = try #require(tokens["refresh_token"])
            #expect(try await h.revoke(accessToken, hint: "access_token").status == 200)
            #expect(h.emulator.revocationCount(token: accessToken).whileValid == 1)
            #expect(try await h.refresh(refreshToken).error == "invalid_grant")
        }
    }

    @Test("an unknown token, or another client's, is answered 200 with an empty body and changes nothing")
    func revokeUnknownToken() async throws {
        try await EmulatorHarness.with { h in
            let unknown = try await h.revoke("r0000000000000000000000000000000.0.abcd.unknown")
            #expect(unknown.status == 200)
            #expect(unknown.body.isEmpty)
            #expect(h.emulator.revocationCount(token: "r0000000000000000000000000000000.0.abcd.unknown").whileInvalid == 1)

            let (_, tokens) = try await h.signIn(clientID: EmulatorHarness.appID)
            let refreshToken = try #require(tokens["refresh_token"])
            let foreign = try await h.revoke(refreshToken, clientID: EmulatorHarness.webID)
            #expect(foreign.status == 200)
            #expect(!h.emulator.isRevoked(token: refreshToken))
            #expect(try await h.refresh(refreshToken).status == 200)
        }
    }

    @Test("an empty revoke request is 400 invalid_client; a revoke without a token is invalid_request")
    func emptyRevoke() async throws {
        try await EmulatorHarness.with { h in
            let empty = try await h.send(.POST, "/auth/revoke", body: Data(), contentType: "application/x-www-form-urlencoded")
            #expect(empty.status == 400)
            #expect(empty.text == #"{"error":"invalid_client"}"#)
            let bare = try await h.send(.POST, "/auth/revoke")
            #expect(bare.status == 400)
            #expect(bare.error == "invalid_client")

            let secret = try await h.clientSecret()
            let noToken = try await h.postForm("/auth/revoke", ["client_id": EmulatorHarness.appID, "client_secret": secret])
            #expect(noToken.status == 400)
            #expect(noToken.error == "invalid_request")
        }
    }

    @Test("issuedTokens lists every refresh and access token of a subject")
    func issuedTokens() async throws {
        try await EmulatorHarness.with { h in
            let (user, tokens) = try await h.signIn()
            let refreshed = try await h.refresh(try #require(tokens["refresh_token"]))
            let expected = [tokens["access_token"], tokens["refresh_token"], refreshed["access_token"]].compactMap { $0 }
            #expect(h.emulator.issuedTokens(sub: user.sub) == expected)
            #expect(h.emulator.issuedTokens(sub: user.sub, clientID: EmulatorHarness.webID).isEmpty)
        }
    }
}
