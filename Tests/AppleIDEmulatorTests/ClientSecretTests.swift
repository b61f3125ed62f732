import AppleIDEmulator
import Foundation
import NIOCore
import NIOHTTP1
import OrchardTesting
import Testing

@Suite("Client authentication at /auth/token and /auth/revoke")
struct ClientSecretTests {
    /// One way to get the client secret wrong.
    enum BadSecret: String, CaseIterable, CustomTestStringConvertible {
        case wrongKey, wrongIssuer, wrongSubject, wrongAudience, wrongKeyID, expired, lifetimeTooLong, issuedInTheFuture
        case unknownClientID

        var testDescription: String { rawValue }
    }

    @Test("a secret signed by the configured key with the right claims is accepted")
    func validSecret() async throws {
        try await EmulatorHarness.with { h in
            let (_, tokens) = try await h.signIn()
            #expect(tokens.status == 200)
            #expect(tokens["access_token"] != nil)
        }
    }

    @Test("a secret living exactly 15,777,000 s is accepted")
    func longestLifetime() async throws {
        try await EmulatorHarness.with { h in
            let code = try h.emulator.authorize(user: h.emulator.makeUser(), clientID: EmulatorHarness.appID).authorizationCode
            let secret = try await h.clientSecret(lifetime: 15_777_000)
            let answer = try await h.postForm(
                "/auth/token",
                ["client_id": EmulatorHarness.appID, "client_secret": secret, "code": code, "grant_type": "authorization_code"]
            )
            #expect(answer.status == 200)
        }
    }

    @Test("a bad client secret answers 400 invalid_client at the token endpoint", arguments: BadSecret.allCases)
    func badSecretAtToken(_ bad: BadSecret) async throws {
        try await EmulatorHarness.with { h in
            let code = try h.emulator.authorize(user: h.emulator.makeUser(), clientID: EmulatorHarness.appID).authorizationCode
            let (clientID, secret) = try await Self.secret(bad, h)
            let answer = try await h.postForm(
                "/auth/token",
                ["client_id": clientID, "client_secret": secret, "code": code, "grant_type": "authorization_code"]
            )
            #expect(answer.status == 400)
            #expect(answer.text == #"{"error":"invalid_client"}"#)
            #expect(h.emulator.calls(to: .token).last?.error == "invalid_client")
            // The code was not consumed by the refused request.
            #expect(try await h.exchange(code: code).status == 200)
        }
    }

    @Test("a bad client secret answers 400 invalid_client at the revoke endpoint and revokes nothing", arguments: BadSecret.allCases)
    func badSecretAtRevoke(_ bad: BadSecret) async throws {
        try await EmulatorHarness.with { h in
            let (_, tokens) = try await h.signIn()
            let refreshToken = try #require(tokens["refresh_token"])
            let (clientID, secret) = try await Self.secret(bad, h)
            let answer = try await h.postForm(
                "/auth/revoke",
                ["client_id": clientID, "client_secret": secret, "token": refreshToken, "token_type_hint": "refresh_token"]
            )
            #expect(answer.status == 400)
            #expect(answer.error == "invalid_client")
            #expect(!h.emulator.isRevoked(token: refreshToken))
            #expect(h.emulator.revocations().isEmpty)
        }
    }

    @Test("a missing client_secret is invalid_client")
    func missingSecret() async throws {
        try await EmulatorHarness.with { h in
            let answer = try await h.postForm(
                "/auth/token",
                ["client_id": EmulatorHarness.appID, "code": "c123", "grant_type": "authorization_code"]
            )
            #expect(answer.status == 400)
            #expect(answer.error == "invalid_client")
        }
    }

    @Test("a secret whose signature is DER-encoded instead of raw r||s is invalid_client")
    func derSignature() async throws {
        try await EmulatorHarness.with { h in
            let secret = try await h.clientSecret()
            let parts = secret.split(separator: ".").map(String.init)
            let raw = try #require(JWSBytes.decode(parts[2]))
            let der = JWSBytes.derSignature(raw)
            let tampered = parts[0] + "." + parts[1] + "." + JWSBytes.encode(der)
            let answer = try await h.postForm(
                "/auth/revoke",
                ["client_id": EmulatorHarness.appID, "client_secret": tampered, "token": "r-unknown"]
            )
            #expect(answer.error == "invalid_client")
        }
    }

    static func secret(_ bad: BadSecret, _ h: EmulatorHarness) async throws -> (clientID: String, secret: String) {
        let app = EmulatorHarness.appID
        switch bad {
        case .wrongKey:
            return (app, try await h.clientSecret(privateKeyPEM: AppleEmulatorConfiguration.makeClientKey().privateKeyPEM))
        case .wrongIssuer:
            return (app, try await h.clientSecret(iss: "OTHERTEAM1"))
        case .wrongSubject:
            return (app, try await h.clientSecret(sub: EmulatorHarness.webID))
        case .wrongAudience:
            return (app, try await h.clientSecret(aud: "https://account.apple.com"))
        case .wrongKeyID:
            return (app, try await h.clientSecret(kid: "OTHERKEY12"))
        case .expired:
            return (app, try await h.clientSecret(issuedAt: h.clock.now().addingTimeInterval(-7200), lifetime: 3600))
        case .lifetimeTooLong:
            return (app, try await h.clientSecret(lifetime: 15_777_001))
        case .issuedInTheFuture:
            return (app, try await h.clientSecret(issuedAt: h.clock.now().addingTimeInterval(3600)))
        case .unknownClientID:
            return ("com.example.unknown", try await h.clientSecret(clientID: "com.example.unknown"))
        }
    }
}
