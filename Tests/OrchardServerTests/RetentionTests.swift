import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import SQLKit
import Storage
import Testing

/// Storage stays bounded: what anonymous clients make Orchard store is removed once its lifetime ends, and the
/// records of finished work on the contract's schedule.
@Suite("Retention: nonces, web-flow states, processed notifications and delivered webhooks are removed on schedule")
struct RetentionTests {
    static func count(_ h: OrchardHarness, _ table: String) async throws -> Int {
        try await h.database.withDatabase { db in
            try await db.raw("SELECT COUNT(*) AS n FROM \(unsafeRaw: table)").first()?.decode(column: "n", as: Int.self) ?? -1
        }
    }

    @Test("nonces and web-flow states minted far past their lifetime are removed, and the tables stop growing")
    func noncesAndStates() async throws {
        try await OrchardHarness.withWebFlow(
            configure: { $0.nonceLifetime = .seconds(30) },
            { h, _ in
                var sizes: [Int] = []
                for _ in 0..<3 {
                    for _ in 0..<40 {
                        _ = try await h.request(.POST, "/v1/auth/apple/nonce")
                        _ = try await h.request(.GET, "/v1/auth/apple/authorize?return_to=/account")
                    }
                    #expect(try await Self.count(h, "nonces") >= 40)
                    #expect(try await Self.count(h, "web_flow_states") >= 40)
                    h.clock.advance(by: 31)
                    let emptied = await eventually(timeout: 10) {
                        let nonces = try? await Self.count(h, "nonces")
                        let states = try? await Self.count(h, "web_flow_states")
                        return nonces == 0 && states == 0
                    }
                    #expect(emptied, "expired nonces and states must be removed within seconds")
                    if h.testDatabase.backend == .sqlite {
                        sizes.append(try await h.databaseBytes().first { $0.name.hasSuffix(".sqlite") }?.bytes.count ?? 0)
                    }
                }
                // Freed pages are reused: the file does not grow round after round.
                if sizes.count == 3 { #expect(sizes[2] <= sizes[1], "the SQLite file kept growing: \(sizes)") }
            }
        )
    }

    @Test("a processed notification's record goes after 30 days, a delivered webhook row after 7, a failed one stays")
    func recordsOfFinishedWork() async throws {
        try await NotificationTests.withHarness { h, receiver in
            let user = h.emulator.makeUser()
            _ = try await DeletionTests.signUp(h, user)
            let jti = "retained-\(UUID().uuidString)"
            let payload = try h.emulator.signNotification(type: "email-disabled", sub: user.sub, clientID: OrchardHarness.clientID, jti: jti)
            #expect(try await NotificationTests.post(h, payload).status == 200)
            #expect(await NotificationTests.processed(h, jti))
            #expect(await eventually { receiver.delivered.count == 1 })
            #expect(await eventually { (try? await Self.count(h, "webhook_outbox WHERE status = 'delivered'")) == 1 })

            h.clock.advance(by: 6 * 86_400)
            try await Task.sleep(for: .seconds(1.5))
            #expect(try await Self.count(h, "webhook_outbox") == 1, "a delivered row stays for 7 days")
            h.clock.advance(by: 2 * 86_400)
            #expect(await eventually(timeout: 10) { (try? await Self.count(h, "webhook_outbox")) == 0 })
            #expect(try await NotificationTests.inboxRow(h, jti) != nil, "a processed record stays for 30 days")
            h.clock.advance(by: 23 * 86_400)
            #expect(await eventually(timeout: 10) { (try? await NotificationTests.inboxRow(h, jti)) == nil })
        }
    }
}
