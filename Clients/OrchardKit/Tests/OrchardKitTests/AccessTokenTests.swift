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

    @Test("a second user's sign-in on the same client never gets the first user's cached token")
    func secondUserGetsTheirOwn() async throws {
        let servers = try await Servers.start()
        defer { servers.stop() }
        let first = try await OrchardClientTests.signIn(servers)
        let client = first.client
        let firstToken = try await client.accessToken()
        #expect(Self.claims(firstToken)["sub"] as? String == first.account.id)

        // Another user signs in on this client without a sign-out in between.
        let nonce = try await client.nonce()
        let sub = "001234.\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()).0002"
        let authorization = try await servers.authorize(sub: sub, nonce: nonce.value)
        let second = try await client.signIn(
            identityToken: authorization.identityToken,
            authorizationCode: authorization.authorizationCode,
            nonce: nonce.value
        )
        #expect(second.id != first.account.id)
        let secondToken = try await client.accessToken()
        #expect(secondToken != firstToken)
        #expect(Self.claims(secondToken)["sub"] as? String == second.id)
    }
}
