import Accounts
import AppleIDEmulator
import Foundation
import OrchardTesting
import Testing

/// Apple's notification endpoint stores no faster than processing clears: once the notifications this process stored
/// ahead of processing fill the inbox's room, the next one is held (verified, not stored, not answered) until a
/// processing pass makes room, or for at most the hold deadline; it is never refused for load.
@Suite("The notification endpoint holds back while processing is behind")
struct NotificationBackpressureTests {
    @Test("with the room full, the next notification waits unstored until a pass clears room, then is stored and answered 200")
    func heldUntilProcessed() async throws {
        try await OrchardHarness.with(jobs: .byTest, deadlines: Deadlines(notificationHold: .seconds(300)), inboxRoom: 2) { h in
            let user = h.emulator.makeUser()
            _ = try await h.signUp(user)
            for type in ["email-disabled", "email-enabled"] {
                let payload = try h.emulator.signNotification(type: type, sub: user.sub, clientID: OrchardHarness.clientID)
                #expect(try await h.postNotification(payload).status == 200)
            }
            let third = try h.emulator.signNotification(type: "email-disabled", sub: user.sub, clientID: OrchardHarness.clientID)
            async let held = h.postNotification(third)
            #expect(await eventually { h.gaugeValues("orchard_notifications_held").last == 1 })
            #expect(try await h.rowCount("notification_inbox") == 2)

            let claimed = await h.runJobs(.notifications)
            #expect(claimed[.notifications] == 2)
            #expect(try await held.status == 200)
            #expect(h.gaugeValues("orchard_notifications_held").last == 0)
            #expect(try await h.rowCount("notification_inbox") == 3)

            #expect(await h.runJobs(.notifications)[.notifications] == 1)
            #expect(try await h.rowCount("notification_inbox WHERE processed_at IS NULL") == 0)
            #expect(try await h.rowCount("accounts WHERE email_forwarding = 'disabled'") == 1)
        }
    }

    @Test("with no processing at all, a held notification is stored and answered 200 once the hold deadline passes")
    func holdIsBounded() async throws {
        try await OrchardHarness.with(jobs: .byTest, deadlines: Deadlines(notificationHold: .milliseconds(200)), inboxRoom: 1) { h in
            let user = h.emulator.makeUser()
            _ = try await h.signUp(user)
            for type in ["email-disabled", "email-enabled", "email-disabled"] {
                let payload = try h.emulator.signNotification(type: type, sub: user.sub, clientID: OrchardHarness.clientID)
                #expect(try await h.postNotification(payload).status == 200)
            }
            #expect(try await h.rowCount("notification_inbox") == 3)
            #expect(h.gaugeValues("orchard_notifications_held").contains(1))
            #expect(h.gaugeValues("orchard_notifications_held").last == 0)
        }
    }

    @Test("a forged notification is refused at once, whatever the room: only verified notifications wait")
    func forgedNotHeld() async throws {
        try await OrchardHarness.with(jobs: .byTest, deadlines: Deadlines(notificationHold: .seconds(300)), inboxRoom: 1) { h in
            let user = h.emulator.makeUser()
            let payload = try h.emulator.signNotification(type: "email-disabled", sub: user.sub, clientID: OrchardHarness.clientID)
            #expect(try await h.postNotification(payload).status == 200)
            let other = try h.emulator.signNotification(type: "email-enabled", sub: user.sub, clientID: OrchardHarness.clientID)
            let response = try await h.postNotification(String(other.dropLast(4)) + "AAAA")
            #expect(response.status == 400)
            #expect(response.code == "notification_invalid")
            // A verified one would be held (up to the 300 s hold): the held gauge shows it, as in holdIsBounded. Judged
            // by that state, not by the client's clock, which a server in the test process can answer seconds late.
            #expect(!h.gaugeValues("orchard_notifications_held").contains { $0 > 0 }, "the forged notification was held")
        }
    }
}
