import AppleID
import Foundation
import OrchardTesting
import Testing

@Suite("Token inspection")
struct TokenInspectionTests {
    @Test("a good token passes every check; aud and nonce are skipped when not asked for")
    func skippedChecks() async throws {
        let harness = VerifierHarness()
        let report = await harness.verifier.inspect(try Shared.apple.sign(harness.claims()), audiences: nil, at: nil, nonce: nil)
        #expect(report.passed)
        #expect(report.kind == .identityToken)
        #expect(report.keyID == Shared.apple.kid)
        #expect(report.algorithm == "RS256")
        #expect(report.checks.map(\.name) == TokenInspection.CheckName.allCases)
        #expect(report.outcome(of: .aud) == .skipped("no audience given"))
        #expect(report.outcome(of: .nonce) == .skipped("no nonce given"))
    }

    @Test("the nonce check passes for the raw nonce and its hash, and fails for another or a missing one")
    func nonce() async throws {
        let harness = VerifierHarness()
        let raw = "nonce-123"
        for claim in [raw, AppleNonce.hash(raw)] {
            let token = try Shared.apple.sign(harness.claims(nonce: claim))
            #expect(await harness.verifier.inspect(token, audiences: nil, at: nil, nonce: raw).outcome(of: .nonce) == .pass)
        }
        let other = try Shared.apple.sign(harness.claims(nonce: "other"))
        let mismatch = await harness.verifier.inspect(other, audiences: nil, at: nil, nonce: raw)
        #expect(mismatch.checks.last?.code == .nonceMismatch)
        #expect(!mismatch.passed)
        let none = await harness.verifier.inspect(try Shared.apple.sign(harness.claims()), audiences: nil, at: nil, nonce: raw)
        #expect(none.checks.last?.code == .nonceMissing)
    }

    @Test("a malformed token fails the format check and skips every other one")
    func malformed() async {
        let harness = VerifierHarness()
        let report = await harness.verifier.inspect("not.a.token", audiences: [Shared.clientID], at: nil, nonce: "n")
        #expect(!report.passed)
        #expect(report.kind == nil)
        #expect(report.checks.first?.code == .identityTokenMalformed)
        #expect(report.checks.dropFirst().allSatisfy { $0.outcome == .skipped("the token is malformed") })
        #expect(report.lines.last == "result: FAIL")
    }

    @Test("every check reports its own failure, each with the code verification would throw")
    func everyFailureReported() async throws {
        let harness = VerifierHarness()
        var claims = harness.claims(aud: "com.someone.else", nonce: "x")
        claims["iss"] = "https://account.apple.com"
        claims["exp"] = Int(harness.clock.now().timeIntervalSince1970) - 3600
        claims["iat"] = Int(harness.clock.now().timeIntervalSince1970) + 3600
        let report = await harness.verifier.inspect(try Shared.forger.sign(claims), audiences: [Shared.clientID], at: nil, nonce: "n")
        let codes = report.checks.map(\.code)
        let expected: [AppleIDError.Code?] = [
            nil, .identityTokenSignature, .identityTokenIssuer, .identityTokenAudience, .identityTokenExpired, .identityTokenExpired,
            .nonceMismatch,
        ]
        #expect(codes == expected)
    }

    @Test("inspection and verification agree: the first failed check is the code verification throws")
    func agreesWithVerification() async throws {
        let harness = VerifierHarness()
        let now = harness.clock.now()
        var tokens: [String] = [
            try Shared.apple.sign(harness.claims()),
            try Shared.forger.sign(harness.claims()),
            try Shared.apple.unsecured(harness.claims()),
            try Shared.apple.sign(harness.claims(aud: "com.someone.else")),
            try Shared.apple.sign(AppleIDTestTokens.identityClaims(aud: Shared.clientID, iat: now.addingTimeInterval(-200_000))),
            try Shared.apple.sign(AppleIDTestTokens.identityClaims(aud: Shared.clientID, iat: now.addingTimeInterval(600))),
            try Shared.apple.sign(AppleIDTestTokens.notificationClaims(aud: Shared.clientID, iat: now, type: "email-enabled")),
            "a.b",
        ]
        var wrongIssuer = harness.claims()
        wrongIssuer["iss"] = "https://account.apple.com"
        tokens.append(try Shared.apple.sign(wrongIssuer))
        for token in tokens {
            let report = await harness.verifier.inspect(token, audiences: harness.verifier.clientIDs, at: nil, nonce: nil)
            let firstFailure = report.checks.first { if case .fail = $0.outcome { true } else { false } }?.code
            let verified: AppleIDError.Code?
            if report.kind == .notification {
                verified = await harness.notificationFailure(token)
            } else {
                verified = await harness.identityFailure(token)
            }
            #expect(firstFailure == verified)
        }
    }

    @Test("a notification is recognised by its events, and its nonce check is skipped")
    func notificationKind() async throws {
        let harness = VerifierHarness()
        let jws = try Shared.apple.sign(AppleIDTestTokens.notificationClaims(aud: Shared.clientID, iat: harness.clock.now(), type: "account-deleted"))
        let report = await harness.verifier.inspect(jws, audiences: [Shared.clientID], at: nil, nonce: "n")
        #expect(report.kind == .notification)
        #expect(report.notificationType == .accountDelete)
        #expect(report.passed)
        #expect(report.outcome(of: .nonce) == .skipped("notifications carry no nonce"))
    }

    @Test("the rendered report names each check and the verdict, and holds no subject, email or token")
    func rendering() async throws {
        let harness = VerifierHarness()
        let token = try Shared.apple.sign(harness.claims(nonce: "secret-nonce"))
        let late = harness.clock.now().addingTimeInterval(200_000)
        let report = await harness.verifier.inspect(token, audiences: [Shared.clientID], at: late, nonce: "secret-nonce")
        let text = report.lines.joined(separator: "\n")
        #expect(text.contains("signature  pass"))
        #expect(text.contains("exp        FAIL"))
        #expect(text.contains("[identity_token_expired]"))
        #expect(report.lines.last == "result: FAIL")
        #expect(!text.contains("0123456789abcdef"))
        #expect(!text.contains("privaterelay"))
        #expect(!text.contains("secret-nonce"))
        #expect(!text.contains(token.split(separator: ".")[1]))
    }
}
