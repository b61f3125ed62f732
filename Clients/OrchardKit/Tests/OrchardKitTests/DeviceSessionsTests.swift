import Foundation
import OrchardKit
import Testing

@Suite("OrchardKit: the user's sessions on their devices, against a real orchard serve", .serialized)
struct DeviceSessionsTests {
    @Test("sessions() lists each device; endSession(id:) signs that device out; signOutOtherDevices() all but this one")
    func sessionsOnDevices() async throws {
        let servers = try await Servers.start()
        defer { servers.stop() }
        let phone = try await OrchardClientTests.signIn(servers, device: "Ada's iPhone")
        let tablet = try await OrchardClientTests.signIn(servers, sub: phone.sub, device: "Ada's iPad")
        #expect(tablet.account.id == phone.account.id)

        let listed = try await tablet.client.sessions()
        #expect(listed.map(\.device) == ["Ada's iPad", "Ada's iPhone"])
        #expect(listed.map(\.isCurrent) == [true, false])
        #expect(listed.allSatisfy { $0.id.hasPrefix("sess_") && $0.expiresAt > $0.createdAt })

        try await tablet.client.endSession(id: listed[1].id)
        await #expect(throws: OrchardError.self) { try await phone.client.session() }
        #expect(await OrchardClientTests.signedOutReason(phone.client) == .signedOut)
        #expect(phone.wipes.count == 1)
        #expect(try await tablet.client.session().id == tablet.account.id, "the tablet stays signed in")

        do {
            try await tablet.client.endSession(id: listed[1].id)
            Issue.record("ending an ended session succeeded")
        } catch {
            guard case .problem(let code, let status, _, _) = error else { throw error }
            #expect(code == .notFound)
            #expect(status == 404)
        }

        let laptop = try await OrchardClientTests.signIn(servers, sub: phone.sub, device: "Ada's MacBook")
        #expect(try await tablet.client.signOutOtherDevices() == 1)
        await #expect(throws: OrchardError.self) { try await laptop.client.session() }
        #expect(await OrchardClientTests.signedOutReason(laptop.client) == .signedOut)
        #expect(try await tablet.client.sessions().map(\.device) == ["Ada's iPad"])

        // Ending this device's own session signs the app out, once.
        let own = try #require(try await tablet.client.sessions().first?.id)
        try await tablet.client.endSession(id: own)
        #expect(await OrchardClientTests.signedOutReason(tablet.client) == .signedOut)
        #expect(tablet.wipes.count == 1)
    }
}

@Suite("OrchardKit: the account's history and Work & School fields, against a real orchard serve", .serialized)
struct AccountEventsTests {
    @Test("events() pages the history newest first; Account carries emailVerified and orgID")
    func events() async throws {
        let servers = try await Servers.start()
        defer { servers.stop() }
        let phone = try await OrchardClientTests.signIn(servers, device: "Ada's iPhone")
        let tablet = try await OrchardClientTests.signIn(servers, sub: phone.sub, device: "Ada's iPad")
        try await tablet.client.endSession(id: try #require(try await tablet.client.sessions().last?.id))
        #expect(tablet.account.emailVerified)
        #expect(tablet.account.orgID == nil)

        let first = try await tablet.client.events(limit: 2)
        #expect(first.events.map(\.kind) == [.signedOut, .signedIn])
        #expect(first.events.first?.reason == "other_device")
        #expect(first.events.last?.device == "Ada's iPad")
        let next = try #require(first.next)
        let second = try await tablet.client.events(limit: 2, before: next)
        #expect(second.events.map(\.kind) == [.signedIn])
        #expect(second.events.first?.device == "Ada's iPhone")
        #expect(second.next == nil)
    }
}
