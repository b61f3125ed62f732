import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import Testing

/// Calls to Apple and to webhook receivers follow no redirect, and a whole exchange (body included) is bounded by its
/// deadline: a peer that sends headers and then stalls holds only its own attempt.
@Suite("Outbound calls: no redirects, one deadline for the whole exchange")
struct OutboundTests {
    /// Two receivers, a short webhook deadline, and the body.
    static func withReceivers(
        deadline: Duration,
        _ body: (OrchardHarness, WebhookReceiver, WebhookReceiver) async throws -> Void
    ) async throws {
        let slow = try await WebhookReceiver.start()
        let other = try await WebhookReceiver.start()
        let urls = [URL(string: slow.url)!, URL(string: other.url)!]
        do {
            try await OrchardHarness.with(
                configure: {
                    $0.webhooks.urls = urls
                    $0.webhooks.secret = OrchardHarness.webhookSecret
                },
                deadlines: Deadlines(webhookAttempt: deadline),
                { h in try await body(h, slow, other) }
            )
        } catch {
            await slow.stop()
            await other.stop()
            throw error
        }
        await slow.stop()
        await other.stop()
    }

    static func deletions(_ h: OrchardHarness, url: String, status: String) async -> [WebhookDeliveryStatus] {
        ((try? await h.lifecycle.outboxes.webhookDeliveries(status: status)) ?? []).filter { $0.delivery.url == url }
    }

    @Test("Apple answering 307 is not followed: sign-in is 503 apple_unavailable after one call, a deletion's revocation stays pending")
    func appleRedirect() async throws {
        try await OrchardHarness.with { h in
            // The injected redirect points back at /auth/token, which would answer normally: a client that followed
            // it would have signed the user in.
            h.emulator.injectFailure(endpoint: .token, failure: .status(307), count: 1)
            let refused = try await h.signIn(h.emulator.makeUser()).response
            #expect(refused.status == 503)
            #expect(refused.code == "apple_unavailable")
            #expect(h.emulator.calls(to: .token).count == 1)
            #expect(try await h.accounts.listAccounts().isEmpty)

            let token = try await h.signUp(h.emulator.makeUser())
            h.emulator.injectFailure(endpoint: .revoke, failure: .status(308), count: 1)
            let deleted = try await h.request(.DELETE, "/v1/account", bearer: token)
            #expect(deleted.status == 200)
            #expect(deleted["apple_revocation"] == "pending")
            #expect(h.emulator.calls(to: .revoke).count == 1)
        }
    }

    @Test("a receiver answering 307 fails that attempt (HTTP 307) and is not posted to twice")
    func receiverRedirect() async throws {
        try await Self.withReceivers(deadline: .seconds(10)) { h, redirecting, other in
            redirecting.setBehaviour(.redirect)
            let token = try await h.signUp(h.emulator.makeUser())
            #expect(try await h.request(.DELETE, "/v1/account", bearer: token).status == 200)
            #expect(await eventually { await Self.deletions(h, url: redirecting.url, status: "pending").first?.lastError == "HTTP 307" })
            #expect(redirecting.attempts.count == 1)
            #expect(redirecting.attempts.first?.headers["webhook-id"] != nil)
            #expect(await eventually { other.delivered.count == 1 })
        }
    }

    @Test("a receiver that sends its status line and stalls: the status decides at the deadline, and later events flow meanwhile")
    func stallAfterHeaders() async throws {
        // A long deadline: while the stalled attempt waits, later deliveries, revocations and notifications go on.
        try await Self.withReceivers(deadline: .seconds(60)) { h, stalled, other in
            stalled.setBehaviour(.stallAfterHeaders)
            let first = try await h.signUp(h.emulator.makeUser())
            #expect(try await h.request(.DELETE, "/v1/account", bearer: first).status == 200)
            #expect(await eventually { stalled.attempts.count == 1 && other.delivered.count == 1 })

            // The stalled attempt is in flight; a second deletion is revoked at Apple and delivered to the other
            // receiver (a worker held by the stall would not send it for a minute).
            let user = h.emulator.makeUser()
            let second = try await h.signUp(user)
            let deleted = try await h.request(.DELETE, "/v1/account", bearer: second)
            #expect(deleted["apple_revocation"] == "revoked")
            #expect(await eventually { other.delivered.count == 2 }, "the other receiver's delivery waited on the stall")
            #expect(await eventually { stalled.attempts.count == 2 }, "the stalled receiver's next event waited on its stall")
            #expect(await Self.deletions(h, url: stalled.url, status: "delivered").isEmpty)
            stalled.releaseStalls()
            #expect(await eventually { await Self.deletions(h, url: stalled.url, status: "delivered").count == 2 })
        }
        // A short deadline: the body never ends, yet the attempt ends at the deadline, decided by its status line.
        try await Self.withReceivers(deadline: .seconds(1)) { h, stalled, _ in
            stalled.setBehaviour(.stallAfterHeaders)
            let token = try await h.signUp(h.emulator.makeUser())
            #expect(try await h.request(.DELETE, "/v1/account", bearer: token).status == 200)
            #expect(await eventually { await Self.deletions(h, url: stalled.url, status: "delivered").count == 1 })
            #expect(stalled.attempts.count == 1, "a 200 status line is a delivery, not retried")
        }
    }

    @Test("a receiver that never sends its headers: the attempt fails at the deadline and is retried")
    func stallBeforeHeaders() async throws {
        try await Self.withReceivers(deadline: .seconds(1)) { h, stalled, other in
            stalled.setBehaviour(.stallBeforeHeaders)
            let token = try await h.signUp(h.emulator.makeUser())
            #expect(try await h.request(.DELETE, "/v1/account", bearer: token).status == 200)
            #expect(await eventually { await Self.deletions(h, url: stalled.url, status: "pending").first?.lastError != nil })
            let pending = try #require(await Self.deletions(h, url: stalled.url, status: "pending").first)
            #expect(pending.lastError?.contains("DeadlineExceeded") == true, "\(pending.lastError ?? "")")
            #expect(other.delivered.count == 1)
            stalled.releaseStalls()
            h.clock.advance(by: 60)
            #expect(await eventually { await Self.deletions(h, url: stalled.url, status: "delivered").count == 1 })
        }
    }
}
