import AppleIDEmulator
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import OrchardTesting
import Testing

@Suite("Sending notifications")
struct NotificationDeliveryTests {
    @Test("sendNotification posts {\"payload\": JWS} as JSON to the notification URL and returns the status")
    func sendsPayload() async throws {
        let receiver = NotificationReceiver(status: .accepted)
        try await receiver.run { url in
            try await EmulatorHarness.with(notifyURL: url) { h in
                let status = try await h.emulator.sendNotification(type: "consent-revoked", sub: "000001.abc.0001", clientID: EmulatorHarness.appID)
                #expect(status == 202)
                let body = try #require(receiver.received.first)
                let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
                #expect(Set(object.keys) == ["payload"])
                let payload = try EmulatorHarness.decode(try #require(object["payload"] as? String)).payload
                #expect(payload["aud"] as? String == EmulatorHarness.appID)
            }
        }
    }

    @Test("without a notification URL sending fails with noNotifyURL; setNotifyURL sets one later")
    func noURL() async throws {
        try await EmulatorHarness.with { h in
            await #expect {
                _ = try await h.emulator.sendNotification(type: "email-enabled", sub: "s", clientID: EmulatorHarness.appID)
            } throws: { error in
                (error as? AppleEmulatorError)?.kind == .noNotifyURL
            }
            let receiver = NotificationReceiver()
            try await receiver.run { url in
                h.emulator.setNotifyURL(url)
                let status = try await h.emulator.sendNotification(type: "email-enabled", sub: "s", clientID: EmulatorHarness.appID)
                #expect(status == 200)
            }
            #expect(receiver.received.count == 1)
        }
    }
}
