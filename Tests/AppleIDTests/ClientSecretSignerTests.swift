import AppleID
import Foundation
import OrchardTesting
import Testing

@Suite("Client secrets")
struct ClientSecretSignerTests {
    private let key = AppleIDTestClientKey()

    private func signer(clock: TestWallClock, lifetime: Duration = .seconds(86_400)) throws -> ClientSecretSigner {
        try ClientSecretSigner(teamID: "TEAM123456", keyID: "KEY1234567", privateKeyPEM: key.privateKeyPEM, clock: clock, lifetime: lifetime)
    }

    @Test("the secret is an ES256 JWT with Apple's header and claims, verifiable with the key's public half")
    func claimsAndHeader() async throws {
        let clock = TestWallClock()
        let secret = try await signer(clock: clock).secret(for: "com.example.orchard")
        let parts = try #require(key.verifiedParts(of: secret.value))
        #expect(parts.header["alg"] as? String == "ES256")
        #expect(parts.header["kid"] as? String == "KEY1234567")
        #expect(parts.claims["iss"] as? String == "TEAM123456")
        #expect(parts.claims["sub"] as? String == "com.example.orchard")
        #expect(parts.claims["aud"] as? String == "https://appleid.apple.com")
        let now = Int(clock.now().timeIntervalSince1970)
        #expect(parts.claims["iat"] as? Int == now)
        #expect(parts.claims["exp"] as? Int == now + 86_400)
        #expect(AppleIDTestClientKey().verifiedParts(of: secret.value) == nil)
    }

    @Test("the secret is redacted when printed")
    func redacted() async throws {
        let secret = try await signer(clock: TestWallClock()).secret(for: "com.example.orchard")
        #expect("\(secret)" == "<redacted>")
    }

    @Test("the secret is cached per client id and renewed once half its lifetime has passed")
    func cachedAndRenewed() async throws {
        let clock = TestWallClock()
        let signer = try signer(clock: clock, lifetime: .seconds(3600))
        let first = try await signer.secret(for: "a")
        clock.advance(by: 1799)
        #expect(try await signer.secret(for: "a") == first)
        let other = try await signer.secret(for: "b")
        #expect(other != first)
        #expect(key.verifiedParts(of: other.value)?.claims["sub"] as? String == "b")
        clock.advance(by: 1)
        let renewed = try await signer.secret(for: "a")
        #expect(renewed != first)
        let claims = try #require(key.verifiedParts(of: renewed.value)?.claims)
        #expect(claims["iat"] as? Int == Int(clock.now().timeIntervalSince1970))
    }

    @Test("a lifetime over 15,777,000 s (or not positive) is refused; the maximum itself is accepted")
    func lifetimeLimit() throws {
        let clock = TestWallClock()
        #expect(throws: AppleIDError.self) { try signer(clock: clock, lifetime: .seconds(15_777_001)) }
        #expect(throws: AppleIDError.self) { try signer(clock: clock, lifetime: .zero) }
        _ = try signer(clock: clock, lifetime: .seconds(15_777_000))
    }

    @Test("a key that is not a P-256 PEM private key is refused with a clear error")
    func badKey() throws {
        for pem in ["", "not a key", try AppleIDTestTokens(kid: "rsa").publicKeyPEM] {
            let error = #expect(throws: AppleIDError.self) {
                try ClientSecretSigner(teamID: "T", keyID: "K", privateKeyPEM: pem, clock: TestWallClock())
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.reason.contains("P-256") == true)
        }
    }
}
