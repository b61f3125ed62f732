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
    @Test("a Managed Apple Account decodes with its org_id and an unverified email; a consumer's with neither")
    func managedAccount() async throws {
        let servers = try await Servers.start()
        defer { servers.stop() }
        let managed = try await OrchardClientTests.signIn(servers, orgID: "org_school_1")
        #expect(managed.account.orgID == "org_school_1")
        #expect(managed.account.emailVerified == false)
        #expect(managed.account.email == "ada@school.example")
        let checked = try await managed.client.session()
        #expect(checked.orgID == "org_school_1" && checked.emailVerified == false, "as GET /v1/session shows it")
        let consumer = try await OrchardClientTests.signIn(servers)
        #expect(consumer.account.orgID == nil)
        #expect(consumer.account.emailVerified)
    }

    @Test("endSession(id:) refuses an id not shaped like a session id without asking Orchard")
    func endSessionRefusesPaths() async throws {
        let server = try GatedServer(answers: [:])
        defer { server.stop() }
        let store = try WipeRaceTests.fileStore()
        defer { try? FileManager.default.removeItem(at: store.url.deletingLastPathComponent()) }
        try store.save(try WipeRaceTests.storedSession())
        let client = try OrchardClient(baseURL: server.url, store: store)
        for id in ["../account", "sess_../../account", "sess_a/b", "sess_", "acct_1", "sess_abc%2F..", String(repeating: "a", count: 80)] {
            do {
                try await client.endSession(id: id)
                Issue.record("endSession(id: \(id)) was sent")
            } catch {
                #expect(error.problemCode == .notFound, "\(id): \(error)")
            }
        }
        #expect(server.requests.isEmpty, "\(server.requests)")
        #expect(await client.state != .signedOut(.signedOut), "a refused id signs nobody out")
    }

    @Test("events() pages the history newest first, with each event's kind, reason and device")
    func events() async throws {
        let servers = try await Servers.start()
        defer { servers.stop() }
        let phone = try await OrchardClientTests.signIn(servers, device: "Ada's iPhone")
        let tablet = try await OrchardClientTests.signIn(servers, sub: phone.sub, device: "Ada's iPad")
        try await tablet.client.endSession(id: try #require(try await tablet.client.sessions().last?.id))

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
