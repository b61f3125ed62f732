import Foundation
import OrchardTesting
import Testing

/// `orchard keys list` and `orchard keys rotate`, through the real binary, on the selected backend.
@Suite("The access-token keys' commands")
struct KeysCommandTests {
    /// `orchard keys list --json`: state by key id, in the listed order.
    static func list(_ setup: OperatorCommandTests.Setup) async throws -> [(id: String, state: String)] {
        let listed = try await setup.run(["keys", "list", "--json"])
        #expect(listed.status == 0, "\(listed.standardError)")
        let keys = try #require(try JSONSerialization.jsonObject(with: Data(listed.standardOutput.utf8)) as? [[String: Any]])
        return keys.compactMap { key in (key["id"] as? String).map { ($0, key["state"] as? String ?? "?") } }
    }

    @Test("keys rotate retires the key that signed; --revoke-current withdraws it at once; keys list shows both")
    func rotateAndRevoke() async throws {
        let setup = try await OperatorCommandTests.Setup.start()
        do {
            // The first rotation makes the installation's first key, then a second that takes over from it.
            let first = try await setup.run(["keys", "rotate"])
            #expect(first.status == 0, "\(first.standardError)")
            let second = try await setup.run(["keys", "rotate"])
            #expect(second.status == 0, "\(second.standardError)")
            let before = try await Self.list(setup)
            let signing = try #require(before.first { $0.state == "current" }?.id, "\(before)")
            #expect(second.standardOutput.contains("new_key: \(signing)"), "\(second.standardOutput)")
            #expect(before.contains { $0.state == "retired" }, "the key before it stays published: \(before)")

            let revoked = try await setup.run(["keys", "rotate", "--revoke-current"])
            #expect(revoked.status == 0, "\(revoked.standardError)")
            #expect(revoked.standardOutput.contains("previous_key: \(signing) (withdrawn from the key set)"), "\(revoked.standardOutput)")
            let after = try await Self.list(setup)
            #expect(after.first { $0.id == signing }?.state == "withdrawn", "\(after)")
            let current = after.filter { $0.state == "current" }
            #expect(current.count == 1 && current.first?.id != signing, "\(after)")
        } catch {
            Issue.record(error)
        }
        await setup.stop()
    }
}
