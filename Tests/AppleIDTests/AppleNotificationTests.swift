import Foundation
import OrchardTesting
import Testing

@testable import AppleID

@Suite("Server-to-server notifications")
struct AppleNotificationTests {
    private func notification(_ harness: VerifierHarness, type: String, eventsAsString: Bool = true) throws -> String {
        try Shared.apple.sign(
            AppleIDTestTokens.notificationClaims(
                aud: Shared.clientID,
                iat: harness.clock.now(),
                type: type,
                eventsAsString: eventsAsString
            )
        )
    }

    @Test("events encoded as a string, as Apple sends them, are decoded")
    func eventsAsString() async throws {
        let harness = VerifierHarness()
        let result = try await harness.verifier.verifyNotification(try notification(harness, type: "consent-revoked"))
        #expect(result.events.type == .consentRevoked)
        #expect(result.events.sub.value == "000123.0123456789abcdef0123456789abcdef.0456")
        #expect(result.events.eventTimeMilliseconds == Int(harness.clock.now().timeIntervalSince1970 * 1000))
        #expect(result.aud == Shared.clientID)
        #expect(result.jti == "test-jti-0001")
    }

    @Test("events as a plain object are accepted too")
    func eventsAsObject() async throws {
        let harness = VerifierHarness()
        let result = try await harness.verifier.verifyNotification(try notification(harness, type: "email-disabled", eventsAsString: false))
        #expect(result.events.type == .emailDisabled)
    }

    @Test("account-delete and account-deleted are both the account deletion", arguments: ["account-delete", "account-deleted"])
    func accountDeleteSpellings(type: String) async throws {
        let harness = VerifierHarness()
        let result = try await harness.verifier.verifyNotification(try notification(harness, type: type))
        #expect(result.events.type == .accountDelete)
    }

    @Test("every documented type is read, and an unknown one is kept as sent")
    func types() {
        #expect(AppleNotificationType(rawValue: "email-enabled") == .emailEnabled)
        #expect(AppleNotificationType(rawValue: "email-disabled") == .emailDisabled)
        #expect(AppleNotificationType(rawValue: "consent-revoked") == .consentRevoked)
        #expect(AppleNotificationType(rawValue: "something-new") == .unknown("something-new"))
        #expect(AppleNotificationType.accountDelete.rawValue == "account-delete")
    }

    @Test("a notification fails the same checks as an identity token")
    func sameChecks() async throws {
        let harness = VerifierHarness()
        let now = harness.clock.now()
        var claims = AppleIDTestTokens.notificationClaims(aud: "com.someone.else", iat: now, type: "consent-revoked")
        #expect(await harness.notificationFailure(try Shared.apple.sign(claims)) == .identityTokenAudience)
        claims["aud"] = Shared.clientID
        #expect(await harness.notificationFailure(try Shared.forger.sign(claims)) == .identityTokenSignature)
        #expect(await harness.notificationFailure(try Shared.apple.unsecured(claims)) == .identityTokenSignature)
        claims["iss"] = "https://account.apple.com"
        #expect(await harness.notificationFailure(try Shared.apple.sign(claims)) == .identityTokenIssuer)
        claims["iss"] = AppleTokenVerifier.appleIssuer
        harness.clock.advance(by: 86_400 + 60)
        #expect(await harness.notificationFailure(try Shared.apple.sign(claims)) == .identityTokenExpired)
    }

    @Test("the email events' is_private_email is read from a string or a boolean")
    func privateEmailFlag() throws {
        let asString =
            #"{"type":"email-disabled","sub":"s","event_time":1630085403648,"email":"x@privaterelay.appleid.com","is_private_email":"true"}"#
        let asBool = #"{"type":"email-enabled","sub":"s","event_time":1630085403648,"is_private_email":false}"#
        #expect(try JSONDecoder().decode(AppleNotificationEvent.self, from: Data(asString.utf8)).isPrivateEmail == true)
        #expect(try JSONDecoder().decode(AppleNotificationEvent.self, from: Data(asBool.utf8)).isPrivateEmail == false)
    }

    @Test("encoding writes events as a JSON string, and decoding reads it back")
    func roundTrip() throws {
        let event = AppleNotificationEvent(type: .accountDelete, sub: Redacted("s-1"), eventTimeMilliseconds: 1_700_000_000_123)
        let original = AppleNotification(
            aud: Shared.clientID,
            iat: Date(timeIntervalSince1970: 1_700_000_000),
            exp: Date(timeIntervalSince1970: 1_700_086_400),
            jti: "j-1",
            events: event
        )
        let data = try JSONEncoder().encode(original)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["events"] is String)
        #expect(try JSONDecoder().decode(AppleNotification.self, from: data) == original)
    }

    @Test("printing a notification shows neither the subject nor the email")
    func redacted() throws {
        let event = AppleNotificationEvent(
            type: .emailEnabled,
            sub: Redacted("000123.secret.0456"),
            eventTimeMilliseconds: 1,
            email: Redacted("me@example.com")
        )
        let text = "\(event) \(String(reflecting: event))"
        #expect(!text.contains("secret"))
        #expect(!text.contains("me@example.com"))
    }
}
