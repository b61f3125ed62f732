import AppleID
import Foundation
import OrchardTesting
import Testing

@Suite("Identity token verification")
struct AppleTokenVerifierTests {
    @Test("a well-formed token signed with Apple's key passes and yields its claims")
    func genuinePasses() async throws {
        let harness = VerifierHarness()
        let token = try Shared.apple.sign(harness.claims(nonce: "n-1"))
        let claims = try await harness.verifier.verifyIdentityToken(token)
        #expect(claims.aud == Shared.clientID)
        #expect(claims.sub.value == "000123.0123456789abcdef0123456789abcdef.0456")
        #expect(claims.email?.value == "user@privaterelay.appleid.com")
        #expect(claims.emailVerified == true)
        #expect(claims.nonce == "n-1")
        #expect(claims.iss == AppleTokenVerifier.appleIssuer)
        #expect(harness.source.fetchCount == 1)
    }

    @Test("a payload changed after signing fails the signature check")
    func tamperedPayload() async throws {
        let harness = VerifierHarness()
        let token = try Shared.apple.sign(harness.claims())
        let parts = token.split(separator: ".").map(String.init)
        var claims = harness.claims()
        claims["sub"] = "000999.ffffffffffffffffffffffffffffffff.0999"
        let forgedPayload = try AppleIDTestTokens.signingInput(header: Shared.apple.header, claims: claims)
            .split(separator: ".")[1]
        let forged = [parts[0], String(forgedPayload), parts[2]].joined(separator: ".")
        #expect(await harness.identityFailure(forged) == .identityTokenSignature)
    }

    @Test("a token signed by another key under Apple's kid fails the signature check")
    func wrongKey() async throws {
        let harness = VerifierHarness()
        let token = try Shared.forger.sign(harness.claims())
        #expect(await harness.identityFailure(token) == .identityTokenSignature)
    }

    @Test("alg none is refused before any key is fetched")
    func algNone() async throws {
        let harness = VerifierHarness()
        let token = try Shared.apple.unsecured(harness.claims())
        #expect(await harness.identityFailure(token) == .identityTokenSignature)
        #expect(harness.source.fetchCount == 0)
    }

    @Test("HS256 keyed with Apple's public key PEM (key confusion) is refused before any key is fetched")
    func hs256KeyConfusion() async throws {
        let harness = VerifierHarness()
        let token = try Shared.apple.hs256(harness.claims(), secret: Shared.apple.publicKeyPEM)
        #expect(await harness.identityFailure(token) == .identityTokenSignature)
        #expect(harness.source.fetchCount == 0)
    }

    @Test("ES256 is refused")
    func es256() async throws {
        let harness = VerifierHarness()
        let token = try Shared.apple.es256(harness.claims())
        #expect(await harness.identityFailure(token) == .identityTokenSignature)
        #expect(harness.source.fetchCount == 0)
    }

    @Test(
        "any alg other than exactly RS256 is refused, even over a valid RS256 signature",
        arguments: ["none", "HS256", "ES256", "RS384", "RS512", "PS256", "rs256", "RS256 ", ""]
    )
    func otherAlgorithms(alg: String) async throws {
        let harness = VerifierHarness()
        let token = try Shared.apple.sign(harness.claims(), header: ["kid": Shared.apple.kid, "alg": alg])
        #expect(await harness.identityFailure(token) == .identityTokenSignature)
        #expect(harness.source.fetchCount == 0)
    }

    @Test("a token without kid is refused although the key set holds only the signing key (no default-key fallback)")
    func missingKid() async throws {
        let harness = VerifierHarness()
        let token = try Shared.apple.sign(harness.claims(), header: ["alg": "RS256"])
        #expect(await harness.identityFailure(token) == .identityTokenSignature)
    }

    @Test("a validly signed token under a kid Apple does not publish is refused (no default-key fallback)")
    func unknownKid() async throws {
        let harness = VerifierHarness()
        let token = try Shared.apple.sign(harness.claims(), header: ["kid": "NOTAPPLES", "alg": "RS256"])
        #expect(await harness.identityFailure(token) == .identityTokenSignature)
        #expect(harness.source.fetchCount == 1)
    }

    @Test(
        "an issuer other than exactly https://appleid.apple.com is refused",
        arguments: ["https://account.apple.com", "http://appleid.apple.com", "https://appleid.apple.com/", "appleid.apple.com", ""]
    )
    func wrongIssuer(iss: String) async throws {
        let harness = VerifierHarness()
        var claims = harness.claims()
        claims["iss"] = iss
        #expect(await harness.identityFailure(try Shared.apple.sign(claims)) == .identityTokenIssuer)
    }

    @Test("a token without iss does not have the claims Apple sends: malformed")
    func missingIssuer() async throws {
        let harness = VerifierHarness()
        var claims = harness.claims()
        claims["iss"] = nil
        #expect(await harness.identityFailure(try Shared.apple.sign(claims)) == .identityTokenMalformed)
    }

    @Test("an audience that is not a configured client id is refused")
    func wrongAudience() async throws {
        let harness = VerifierHarness()
        let token = try Shared.apple.sign(harness.claims(aud: "com.someone.else"))
        #expect(await harness.identityFailure(token) == .identityTokenAudience)
    }

    @Test("a configured audience other than the request's client_id is refused; the matching one passes")
    func expectedAudience() async throws {
        let harness = VerifierHarness()
        let token = try Shared.apple.sign(harness.claims(aud: Shared.webClientID))
        #expect(await harness.identityFailure(token, expectedAudience: Shared.clientID) == .identityTokenAudience)
        #expect(await harness.identityFailure(token, expectedAudience: Shared.webClientID) == nil)
        #expect(await harness.identityFailure(token) == nil)
    }

    @Test("aud as a one-element array passes; several audiences are refused")
    func audienceArrays() async throws {
        let harness = VerifierHarness()
        var claims = harness.claims()
        claims["aud"] = [Shared.clientID]
        #expect(await harness.identityFailure(try Shared.apple.sign(claims)) == nil)
        claims["aud"] = [Shared.clientID, Shared.webClientID]
        #expect(await harness.identityFailure(try Shared.apple.sign(claims)) == .identityTokenMalformed)
    }

    @Test("an expired token passes inside the leeway and fails once exp ≤ now − leeway")
    func expiry() async throws {
        let harness = VerifierHarness()
        let token = try Shared.apple.sign(harness.claims())
        let exp = harness.clock.now().addingTimeInterval(86_400)
        harness.clock.set(exp.addingTimeInterval(59))
        #expect(await harness.identityFailure(token) == nil)
        harness.clock.set(exp.addingTimeInterval(60))
        #expect(await harness.identityFailure(token) == .identityTokenExpired)
        harness.clock.set(exp.addingTimeInterval(3600))
        #expect(await harness.identityFailure(token) == .identityTokenExpired)
    }

    @Test("a token issued more than the leeway in the future is refused; within the leeway it passes")
    func issuedInFuture() async throws {
        let harness = VerifierHarness()
        let now = harness.clock.now()
        let early = try Shared.apple.sign(AppleIDTestTokens.identityClaims(aud: Shared.clientID, iat: now.addingTimeInterval(59)))
        #expect(await harness.identityFailure(early) == nil)
        let future = try Shared.apple.sign(AppleIDTestTokens.identityClaims(aud: Shared.clientID, iat: now.addingTimeInterval(61)))
        #expect(await harness.identityFailure(future) == .identityTokenExpired)
    }

    @Test("a zero leeway is exact")
    func zeroLeeway() async throws {
        let harness = VerifierHarness(leeway: .zero)
        let token = try Shared.apple.sign(harness.claims())
        harness.clock.advance(by: 86_399)
        #expect(await harness.identityFailure(token) == nil)
        harness.clock.advance(by: 1)
        #expect(await harness.identityFailure(token) == .identityTokenExpired)
    }

    @Test("checks run in order: the signature before the issuer, the issuer before the audience and the time")
    func order() async throws {
        let harness = VerifierHarness()
        var claims = harness.claims(aud: "com.someone.else")
        claims["iss"] = "https://account.apple.com"
        claims["exp"] = 1
        #expect(await harness.identityFailure(try Shared.apple.unsecured(claims)) == .identityTokenSignature)
        #expect(await harness.identityFailure(try Shared.apple.sign(claims)) == .identityTokenIssuer)
        claims["iss"] = AppleTokenVerifier.appleIssuer
        #expect(await harness.identityFailure(try Shared.apple.sign(claims)) == .identityTokenAudience)
        claims["aud"] = Shared.clientID
        #expect(await harness.identityFailure(try Shared.apple.sign(claims)) == .identityTokenExpired)
    }

    @Test("an error's reason never holds the token, the subject or the email")
    func reasonsHoldNoSecrets() async throws {
        let harness = VerifierHarness()
        let token = try Shared.forger.sign(harness.claims())
        let error = await #expect(throws: AppleIDError.self) { try await harness.verifier.verifyIdentityToken(token) }
        let text = "\(String(describing: error)) \(error?.reason ?? "")"
        #expect(!text.contains("0123456789abcdef"))
        #expect(!text.contains("privaterelay"))
        #expect(!text.contains(token.prefix(20)))
    }
}
