import NIOHTTP1
import Testing

@testable import AppleIDEmulator

@Suite("The emulator's own threads")
struct OwnThreadsTests {
    /// In a test process whose concurrency pool other tests keep busy, an emulator answering on the pool would be late
    /// for the server under test, whose own deadline on each call to Apple then ends it.
    @Test("a started emulator takes up every call to Apple's endpoints on threads of its own, not the concurrency pool")
    func ownThreads() async throws {
        try await EmulatorHarness.with { h in
            _ = try await h.send(.GET, "/auth/keys")
            _ = try await h.refresh("never-issued", clientID: EmulatorHarness.webID)
            #expect(h.emulator.calls().count == 2)
            #expect(h.emulator.callsOnOwnThreads == 2)
        }
    }
}
