import AppleIDEmulator
import Foundation
import NIOCore
import NIOHTTP1
import OrchardTesting
import Testing

@Suite("The call log")
struct CallLogTests {
    @Test("every call to Apple's endpoints is logged in order with what was sent and what was answered")
    func callLog() async throws {
        try await EmulatorHarness.with { h in
            let authorization = try h.emulator.authorize(
                user: h.emulator.makeUser(),
                clientID: EmulatorHarness.webID,
                redirectURI: EmulatorHarness.redirectURI
            )
            _ = try await h.send(.GET, "/auth/keys")
            let tokens = try await h.exchange(
                code: authorization.authorizationCode,
                clientID: EmulatorHarness.webID,
                redirectURI: EmulatorHarness.redirectURI
            )
            let refreshToken = try #require(tokens["refresh_token"])
            _ = try await h.refresh(refreshToken, clientID: EmulatorHarness.webID)
            _ = try await h.revoke(refreshToken, clientID: EmulatorHarness.webID)
            _ = try await h.refresh(refreshToken, clientID: EmulatorHarness.webID)

            let calls = h.emulator.calls()
            #expect(calls.map(\.endpoint) == [.keys, .token, .token, .revoke, .token])
            #expect(calls.map(\.status) == [200, 200, 200, 200, 400])
            #expect(calls.map(\.sequence) == calls.map(\.sequence).sorted())
            #expect(calls.allSatisfy { $0.time == h.clock.now() })

            let exchange = calls[1]
            #expect(exchange.grantType == "authorization_code")
            #expect(exchange.clientID == EmulatorHarness.webID)
            #expect(exchange.code == authorization.authorizationCode)
            #expect(exchange.redirectURI == EmulatorHarness.redirectURI)
            #expect(exchange.error == nil)

            #expect(calls[2].grantType == "refresh_token")
            #expect(calls[2].refreshToken == refreshToken)

            #expect(calls[3].token == refreshToken)
            #expect(calls[3].tokenTypeHint == "refresh_token")
            #expect(calls[3].clientID == EmulatorHarness.webID)

            #expect(calls[4].error == "invalid_grant")
            #expect(calls[4].detail != nil)

            h.emulator.clearCalls()
            #expect(h.emulator.calls().isEmpty)
            _ = try await h.send(.GET, "/auth/keys")
            #expect((h.emulator.calls().first?.sequence ?? 0) > calls.last!.sequence)
        }
    }

    @Test("a refused client secret is logged with invalid_client and the emulator's reason")
    func refusalDetail() async throws {
        try await EmulatorHarness.with { h in
            let secret = try await h.clientSecret(issuedAt: h.clock.now().addingTimeInterval(-7200), lifetime: 3600)
            _ = try await h.postForm("/auth/revoke", ["client_id": EmulatorHarness.appID, "client_secret": secret, "token": "x"])
            let call = try #require(h.emulator.calls().first)
            #expect(call.status == 400)
            #expect(call.error == "invalid_client")
            #expect(call.detail == "client secret expired")
        }
    }
}
