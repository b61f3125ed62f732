import AppleID
import Foundation
import OrchardTesting
import Testing

@Suite("Malformed tokens")
struct MalformedTokenTests {
    /// Base64url of a string's UTF-8 bytes.
    private static func segment(_ text: String) -> String { AppleIDTestTokens.base64URL(Data(text.utf8)) }

    private static let header = segment(#"{"kid":"ORCHARDTEST1","alg":"RS256"}"#)
    private static let payload = segment(#"{"iss":"https://appleid.apple.com"}"#)

    @Test(
        "tokens that are not three base64url parts with JSON objects are malformed, and no key is fetched",
        arguments: [
            "",
            "abc",
            "\(header).\(payload)",
            "\(header).\(payload).c2ln.extra",
            "%%%.\(payload).c2ln",
            "\(header).%%%.c2ln",
            "\(header).\(payload).%%%",
            "\(segment("not json")).\(payload).c2ln",
            "\(header).\(segment("not json")).c2ln",
            "\(header).\(segment("[1,2,3]")).c2ln",
            "\(segment("[]")).\(payload).c2ln",
            "..",
        ]
    )
    func malformed(token: String) async throws {
        let harness = VerifierHarness()
        #expect(await harness.identityFailure(token) == .identityTokenMalformed)
        #expect(await harness.notificationFailure(token) == .identityTokenMalformed)
        #expect(harness.source.fetchCount == 0)
    }

    @Test("a signed token missing sub is malformed")
    func missingSubject() async throws {
        let harness = VerifierHarness()
        var claims = harness.claims()
        claims["sub"] = nil
        #expect(await harness.identityFailure(try Shared.apple.sign(claims)) == .identityTokenMalformed)
    }

    @Test("a malformed token's reason names the claim at fault, not its value")
    func reasonNamesClaim() async throws {
        let harness = VerifierHarness()
        var claims = harness.claims()
        claims["email_verified"] = "maybe-000123"
        let error = await #expect(throws: AppleIDError.self) {
            try await harness.verifier.verifyIdentityToken(try Shared.apple.sign(claims))
        }
        #expect(error?.code == .identityTokenMalformed)
        #expect(error?.reason.contains("email_verified") == true)
        #expect(error?.reason.contains("maybe") == false)
    }

    @Test("an identity token is not a notification, and a notification is not an identity token")
    func kindsDoNotMix() async throws {
        let harness = VerifierHarness()
        let identity = try Shared.apple.sign(harness.claims())
        let notification = try Shared.apple.sign(
            AppleIDTestTokens.notificationClaims(aud: Shared.clientID, iat: harness.clock.now(), type: "consent-revoked")
        )
        #expect(await harness.notificationFailure(identity) == .identityTokenMalformed)
        #expect(await harness.identityFailure(notification) == .identityTokenMalformed)
    }
}
