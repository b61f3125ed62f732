import Foundation
import OrchardKit
import Testing

@Suite("OrchardKit: access tokens, cached and renewed, against a real orchard serve", .serialized)
struct AccessTokenTests {
    /// A clock the test moves.
    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var offset: TimeInterval = 0
        func advance(_ seconds: TimeInterval) { lock.withLock { offset += seconds } }
        func now() -> Date { lock.withLock { Date().addingTimeInterval(offset) } }
    }

    /// The claims of a JWT, unverified.
    static func claims(_ token: String) -> [String: Any] {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return [:] }
        var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        return Data(base64Encoded: text).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] } ?? [:]
    }

    @Test("accessToken() hands out its token until a fifth of its lifetime is left, then asks again; a sign-out drops it")
    func cachedAndRenewed() async throws {
        let servers = try await Servers.start()
        defer { servers.stop() }
        let signed = try await OrchardClientTests.signIn(servers)
        let clock = Clock()
        // The same stored session, read by a client whose clock the test moves.
        let client = try OrchardClient(baseURL: servers.orchardURL, store: signed.store, now: { clock.now() })

        let first = try await client.accessToken()
        #expect(Self.claims(first)["sub"] as? String == signed.account.id)
        #expect(try await client.accessToken() == first, "kept while fresh")
        clock.advance(230)  // 70 of its 300 seconds left: more than a fifth
        #expect(try await client.accessToken() == first)
        clock.advance(11)  // 59 left: less than a fifth
        let second = try await client.accessToken()
        #expect(second != first)
        #expect(Self.claims(second)["jti"] as? String != Self.claims(first)["jti"] as? String)

        try await client.signOut()
        await #expect(throws: OrchardError.self) { try await client.accessToken() }
    }
}
