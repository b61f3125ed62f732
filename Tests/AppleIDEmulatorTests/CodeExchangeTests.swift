import AppleIDEmulator
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import OrchardTesting
import Testing

@Suite("Authorization code exchange at /auth/token")
struct CodeExchangeTests {
    @Test("a code exchange answers Apple's token shape, with an id_token for the same subject and client")
    func successShape() async throws {
        try await EmulatorHarness.with { h in
            let user = h.emulator.makeUser()
            let authorization = try h.emulator.authorize(user: user, clientID: EmulatorHarness.appID, nonce: "n-0S8-1K8")
            let answer = try await h.exchange(code: authorization.authorizationCode)
            #expect(answer.status == 200)
            #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
            #expect(answer.headers["cache-control"] == "no-store")
            #expect(Set(answer.json.keys) == ["access_token", "token_type", "expires_in", "refresh_token", "id_token"])
            #expect(answer["token_type"] == "bearer")
            #expect(answer.json["expires_in"] as? Int == 3600)
            let accessToken = try #require(answer["access_token"])
            #expect(accessToken.hasPrefix("a"))
            #expect(answer["refresh_token"]?.hasPrefix("r") == true)
            let idToken = try EmulatorHarness.decode(try #require(answer["id_token"]))
            #expect(idToken.payload["sub"] as? String == user.sub)
            #expect(idToken.payload["aud"] as? String == EmulatorHarness.appID)
            #expect(idToken.payload["iss"] as? String == "https://appleid.apple.com")
            #expect(idToken.payload["email"] as? String == user.email)
            #expect(idToken.payload["nonce"] as? String == "n-0S8-1K8")
            let atHash = Data(SHA256.hash(data: Data(accessToken.utf8))).prefix(16)
            #expect(idToken.payload["at_hash"] as? String == JWSBytes.encode(Data(atHash)))
        }
    }

    @Test("a code is single use: the second exchange is invalid_grant, 'The code has already been used.'")
    func singleUse() async throws {
        try await EmulatorHarness.with { h in
            let code = try h.emulator.authorize(user: h.emulator.makeUser(), clientID: EmulatorHarness.appID).authorizationCode
            #expect(try await h.exchange(code: code).status == 200)
            let again = try await h.exchange(code: code)
            #expect(again.status == 400)
            #expect(again.error == "invalid_grant")
            #expect(again["error_description"] == "The code has already been used.")
        }
    }

    @Test("a code lives 5 minutes by the emulator's clock")
    func codeLifetime() async throws {
        try await EmulatorHarness.with { h in
            let user = h.emulator.makeUser()
            let early = try h.emulator.authorize(user: user, clientID: EmulatorHarness.appID).authorizationCode
            let late = try h.emulator.authorize(user: user, clientID: EmulatorHarness.appID).authorizationCode
            h.clock.advance(by: 299)
            #expect(try await h.exchange(code: early).status == 200)
            h.clock.advance(by: 2)
            let expired = try await h.exchange(code: late)
            #expect(expired.status == 400)
            #expect(expired.error == "invalid_grant")
            #expect(expired["error_description"] == "The code has expired or has been revoked.")
        }
    }

    @Test("a code issued to one client cannot be exchanged by another: invalid_grant, client_id mismatch")
    func clientMismatch() async throws {
        try await EmulatorHarness.with { h in
            let code = try h.emulator.authorize(user: h.emulator.makeUser(), clientID: EmulatorHarness.appID).authorizationCode
            let answer = try await h.exchange(code: code, clientID: EmulatorHarness.webID)
            #expect(answer.status == 400)
            #expect(answer.error == "invalid_grant")
            #expect(answer["error_description"] == "client_id mismatch. The code was not issued to \(EmulatorHarness.webID)")
            #expect(try await h.exchange(code: code).status == 200)
        }
    }

    @Test("redirect_uri must be the authorization's when it had one, and absent when it had none")
    func redirectURIRule() async throws {
        try await EmulatorHarness.with { h in
            let user = h.emulator.makeUser()
            let web = try h.emulator.authorize(user: user, clientID: EmulatorHarness.webID, redirectURI: EmulatorHarness.redirectURI)
            let missing = try await h.exchange(code: web.authorizationCode, clientID: EmulatorHarness.webID)
            #expect(missing.error == "invalid_grant")
            let other = try await h.exchange(
                code: web.authorizationCode,
                clientID: EmulatorHarness.webID,
                redirectURI: "https://evil.example.com/callback"
            )
            #expect(other.error == "invalid_grant")
            let same = try await h.exchange(
                code: web.authorizationCode,
                clientID: EmulatorHarness.webID,
                redirectURI: EmulatorHarness.redirectURI
            )
            #expect(same.status == 200)

            let native = try h.emulator.authorize(user: user, clientID: EmulatorHarness.appID)
            let extra = try await h.exchange(code: native.authorizationCode, redirectURI: EmulatorHarness.redirectURI)
            #expect(extra.error == "invalid_grant")
            #expect(try await h.exchange(code: native.authorizationCode).status == 200)
        }
    }

    @Test("unknown codes, unknown grant types and missing parameters get Apple's error codes")
    func malformedRequests() async throws {
        try await EmulatorHarness.with { h in
            let unknown = try await h.exchange(code: "c0000.0.abcd.unknown")
            #expect(unknown.status == 400)
            #expect(unknown.error == "invalid_grant")

            let secret = try await h.clientSecret()
            let app = EmulatorHarness.appID
            let noCode = try await h.postForm("/auth/token", ["client_id": app, "client_secret": secret, "grant_type": "authorization_code"])
            #expect(noCode.error == "invalid_request")
            let noGrantType = try await h.postForm("/auth/token", ["client_id": app, "client_secret": secret, "code": "c1"])
            #expect(noGrantType.error == "invalid_request")
            let password = try await h.postForm("/auth/token", ["client_id": app, "client_secret": secret, "grant_type": "password"])
            #expect(password.status == 400)
            #expect(password.error == "unsupported_grant_type")
            let noRefreshToken = try await h.postForm("/auth/token", ["client_id": app, "client_secret": secret, "grant_type": "refresh_token"])
            #expect(noRefreshToken.error == "invalid_request")
        }
    }

    @Test("the next N code exchanges answer without a refresh_token when told to")
    func omitRefreshToken() async throws {
        try await EmulatorHarness.with { h in
            h.emulator.omitRefreshToken(nextExchanges: 2)
            for _ in 0..<2 {
                let (_, tokens) = try await h.signIn()
                #expect(tokens.status == 200)
                #expect(tokens.json["refresh_token"] == nil)
                #expect(tokens["access_token"] != nil)
                #expect(tokens["id_token"] != nil)
            }
            let (_, third) = try await h.signIn()
            #expect(third["refresh_token"] != nil)
        }
    }
}
