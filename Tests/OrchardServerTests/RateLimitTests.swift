import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

/// Anonymous routes are rate-limited per client address: `429 rate_limited` with `Retry-After`, nothing stored, one
/// budget shared by the four routes, and `X-Forwarded-For` believed only from a trusted proxy.
@Suite("Rate limits on the anonymous routes")
struct RateLimitTests {
    @Test("past the limit: 429 rate_limited with Retry-After, nothing stored, one budget for the four routes")
    func limitIsShared() async throws {
        try await OrchardHarness.withWebFlow(
            configure: { $0.listener.rateLimitPerMinute = 3 },
            { h, _ in
                for _ in 0..<3 { #expect(try await h.request(.POST, "/v1/auth/apple/nonce").status == 201) }
                #expect(try await h.rowCount("nonces") == 3)

                let refused = try await h.request(.POST, "/v1/auth/apple/nonce")
                #expect(refused.status == 429)
                #expect(refused.code == "rate_limited")
                #expect(refused.header("Content-Type")?.hasPrefix("application/problem+json") == true)
                // Three a minute: a token every 20 seconds.
                #expect(refused.header("Retry-After") == "20")
                #expect(try await h.rowCount("nonces") == 3, "a refused request stores nothing")

                // The same budget covers the other three anonymous routes.
                #expect(try await h.request(.GET, "/v1/auth/apple/authorize?return_to=/account").status == 429)
                #expect(try await h.rowCount("web_flow_states") == 0)
                #expect(try await h.request(.POST, "/v1/auth/apple", json: ["identity_token": "x"]).code == "rate_limited")
                let callback = try await h.request(.POST, "/v1/auth/apple/callback", body: Data("state=x".utf8))
                #expect(callback.code == "rate_limited")
                #expect(callback.clearsCookie("__Host-orchard_web_state"), "every answer of the callback clears the flow's cookie")

                // Not limited: Apple's notifications and the authenticated routes.
                #expect(try await h.request(.POST, "/v1/apple/notifications", json: ["payload": "x"]).status == 400)
                #expect(try await h.request(.GET, "/v1/session").status == 401)

                // The bucket refills continuously: 20 seconds later, one more request.
                h.clock.advance(by: 20)
                #expect(try await h.request(.POST, "/v1/auth/apple/nonce").status == 201)
                #expect(try await h.request(.POST, "/v1/auth/apple/nonce").status == 429)
                #expect(h.counted("orchard_rate_limited_total") == 5)
            }
        )
    }

    @Test("an untrusted peer's X-Forwarded-For is ignored: a flood of forged addresses is counted as the peer")
    func forgedForwardedFor() async throws {
        try await OrchardHarness.with(
            configure: { $0.listener.rateLimitPerMinute = 5 },
            { h in
                var statuses: [Int] = []
                for index in 0..<50 {
                    let forged = "203.0.113.\(index), 198.51.100.\(index)"
                    statuses.append(try await h.request(.POST, "/v1/auth/apple/nonce", headers: [("X-Forwarded-For", forged)]).status)
                }
                #expect(statuses.filter { $0 == 201 }.count == 5)
                #expect(statuses.filter { $0 == 429 }.count == 45)
                #expect(try await h.rowCount("nonces") == 5)
            }
        )
    }

    @Test("behind a trusted proxy: the right-most untrusted forwarded address is the client, each with its own budget")
    func trustedProxy() async throws {
        try await OrchardHarness.with(configure: Self.behindProxies) { h in
            // (forwarded-for, expected status), in order.
            let steps: [(String?, Int)] = [
                // Two clients behind the proxy, each with its own two requests a minute.
                ("198.51.100.7", 201), ("198.51.100.7", 201), ("198.51.100.7", 429), ("198.51.100.8", 201),
                // A client that forges the left part is counted by the address the proxy saw (right-most untrusted),
                // also through a second trusted hop.
                ("1.2.3.4, 198.51.100.8, 10.1.2.3", 201), ("5.6.7.8, 198.51.100.8", 429),
                // IPv4-mapped IPv6 is the same client as its IPv4 form.
                ("::ffff:198.51.100.7", 429),
                // Only trusted hops: the left-most is the client.
                ("10.9.9.9, 10.0.0.1", 201),
                // No header: the proxy itself is the client.
                (nil, 201),
            ]
            for (forwarded, expected) in steps {
                let status = try await Self.nonce(h, forwardedFor: forwarded)
                #expect(status == expected, "X-Forwarded-For: \(forwarded ?? "none")")
            }
        }
    }

    @Test("an IPv6 client's budget is its /64: every address of one /64 shares it, another /64 has its own")
    func ipv6Budgets() async throws {
        try await OrchardHarness.with(configure: Self.behindProxies) { h in
            let steps: [(String, Int)] = [
                ("2001:db8:1:2::1", 201), ("2001:db8:1:2:ffff:ffff:ffff:fffe", 201),
                // A third address of the same /64: the budget of two is spent.
                ("2001:db8:1:2:abcd::7", 429), ("[2001:db8:1:2::99]", 429),
                // The next /64 is another client.
                ("2001:db8:1:3::1", 201), ("2001:db8:1:3::2", 201), ("2001:db8:1:3::3", 429),
            ]
            for (forwarded, expected) in steps {
                let status = try await Self.nonce(h, forwardedFor: forwarded)
                #expect(status == expected, "X-Forwarded-For: \(forwarded)")
            }
            #expect(IPAddress("2001:db8:1:2::1")!.budgetKey == IPAddress("2001:db8:1:2:ffff::1")!.budgetKey)
            #expect(IPAddress("2001:db8:1:2::1")!.budgetKey != IPAddress("2001:db8:1:3::1")!.budgetKey)
            #expect(IPAddress("192.0.2.1")!.budgetKey == IPAddress("192.0.2.1")!)
        }
    }

    @Test("X-Forwarded-For entries with a port count by their address, so clients behind the proxy keep budgets of their own")
    func forwardedEntriesWithPorts() async throws {
        try await OrchardHarness.with(configure: Self.behindProxies) { h in
            let steps: [(String, Int)] = [
                ("203.0.113.7:41234", 201), ("203.0.113.7:50000", 201), ("203.0.113.7:1", 429),
                ("203.0.113.8:41234", 201), ("[2001:db8::1]:41234", 201), ("[2001:db8::2]:8", 201), ("[2001:db8::3]", 429),
            ]
            for (forwarded, expected) in steps {
                let status = try await Self.nonce(h, forwardedFor: forwarded)
                #expect(status == expected, "X-Forwarded-For: \(forwarded)")
            }
        }
        #expect(IPAddress(forwardedEntry: "203.0.113.7:41234") == IPAddress("203.0.113.7"))
        #expect(IPAddress(forwardedEntry: "[2001:db8::1]:41234") == IPAddress("2001:db8::1"))
        #expect(IPAddress(forwardedEntry: " 2001:db8::1 ") == IPAddress("2001:db8::1"))
        #expect(IPAddress(forwardedEntry: "203.0.113.7:") == nil)
        #expect(IPAddress(forwardedEntry: "203.0.113.7:port") == nil)
        #expect(IPAddress(forwardedEntry: "[2001:db8::1]x") == nil)
    }

    @Sendable static func behindProxies(_ configuration: inout OrchardConfiguration) {
        configuration.listener.rateLimitPerMinute = 2
        configuration.listener.trustedProxies = ["127.0.0.0/8", "10.0.0.0/8"].compactMap { IPAddressRange($0) }
    }

    static func nonce(_ h: OrchardHarness, forwardedFor: String?) async throws -> Int {
        try await h.request(.POST, "/v1/auth/apple/nonce", headers: forwardedFor.map { [("X-Forwarded-For", $0)] } ?? []).status
    }

    @Test("addresses and CIDR ranges parse as ORCHARD_TRUSTED_PROXIES writes them")
    func addressRanges() {
        #expect(IPAddressRange("10.0.0.0/8")!.contains(IPAddress("10.200.1.1")!))
        #expect(!IPAddressRange("10.0.0.0/8")!.contains(IPAddress("11.0.0.1")!))
        #expect(IPAddressRange("192.0.2.1")!.contains(IPAddress("::ffff:192.0.2.1")!))
        #expect(IPAddressRange("2001:db8::/32")!.contains(IPAddress("2001:db8:1::5")!))
        #expect(!IPAddressRange("2001:db8::/32")!.contains(IPAddress("2001:db9::5")!))
        #expect(!IPAddressRange("::/0")!.contains(IPAddress("192.0.2.1")!))
        #expect(IPAddressRange("0.0.0.0/0")!.contains(IPAddress("192.0.2.1")!))
        #expect(IPAddressRange("10.0.0.0/33") == nil)
        #expect(IPAddressRange("example.com") == nil)
        #expect(IPAddress("[::1]")?.description == "::1")
        #expect(IPAddress("not an address") == nil)
    }
}
