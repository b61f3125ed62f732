import Accounts
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
    @Test("nonces and web-flow states minted far past their lifetime are removed, and the tables stop growing")
    func noncesAndStates() async throws {
        try await OrchardHarness.withWebFlow(
            configure: { $0.lifecycle.nonceLifetime = .seconds(30) },
            { h, _ in
                var sizes: [Int] = []
                for _ in 0..<3 {
                    for _ in 0..<40 {
                        _ = try await h.request(.POST, "/v1/auth/apple/nonce")
                        _ = try await h.request(.GET, "/v1/auth/apple/authorize?return_to=/account")
                    }
                    #expect(try await h.rowCount("nonces") >= 40)
                    #expect(try await h.rowCount("web_flow_states") >= 40)
                    h.clock.advance(by: 31)
                    let emptied = await eventually {
                        let nonces = try? await h.rowCount("nonces")
                        let states = try? await h.rowCount("web_flow_states")
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

    @Test("removal keeps pace with a flood: every expired nonce and state is gone within 5 s after the last one's lifetime ends")
    func floodKeepsPace() async throws {
        try await OrchardHarness.withWebFlow(
            configure: { $0.lifecycle.nonceLifetime = .seconds(2) },
            { h, _ in
                // Eight clients issue nonces and start web flows for 4 s, while the clock moves a second per second, so
                // rows expire all the time the flood lasts.
                let flooding = ContinuousClock.now + .seconds(4)
                let made = try await withThrowingTaskGroup(of: Int.self) { group in
                    for client in 0..<8 {
                        group.addTask {
                            var made = 0
                            while ContinuousClock.now < flooding {
                                if client % 2 == 0 {
                                    if try await h.request(.POST, "/v1/auth/apple/nonce").status == 201 { made += 1 }
                                } else if try await h.request(.GET, "/v1/auth/apple/authorize?return_to=/account").status == 302 {
                                    made += 2
                                }
                            }
                            return made
                        }
                    }
                    group.addTask {
                        while ContinuousClock.now < flooding {
                            try await Task.sleep(for: .seconds(1))
                            h.clock.advance(by: 1)
                        }
                        return 0
                    }
                    return try await group.reduce(0, +)
                }
                // However fast this machine made them, there were many more than one pass's worth before this change.
                #expect(made > 200, "the flood made only \(made) rows")
                // The last row's lifetime ends now.
                h.clock.advance(by: 3)
                let start = ContinuousClock.now
                var left = (nonces: -1, states: -1)
                while ContinuousClock.now - start < .seconds(5) {
                    left = (try await h.rowCount("nonces"), try await h.rowCount("web_flow_states"))
                    if left == (0, 0) { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(left == (0, 0), "left after 5 s: \(left) of \(made) rows made")
            }
        )
    }

    @Test("a session's row goes 7 days after it ended or expired; its session_revoked answer holds until then")
    func sessionRows() async throws {
        try await OrchardHarness.with(jobs: .byTest) { h in
            let ended = try await h.signUp(h.emulator.makeUser())
            let live = try await h.signUp(h.emulator.makeUser())
            #expect(try await h.request(.DELETE, "/v1/session", bearer: ended).status == 204)
            // Six days on, the ended session still says why.
            h.clock.advance(by: 6 * 86_400)
            await h.runJobs()
            #expect(try await h.request(.GET, "/v1/session", bearer: ended)["reason"] == "signed_out")
            #expect(try await h.rowCount("sessions") == 2)
            // Past seven days it is gone; the live session (expiring after 30 days) stays.
            h.clock.advance(by: 86_400 + 60)
            await h.runJobs()
            #expect(try await h.rowCount("sessions") == 1)
            #expect(try await h.request(.GET, "/v1/session", bearer: ended).code == "session_invalid")
            #expect(try await h.request(.GET, "/v1/session", bearer: live).status == 200)
            // An expired session goes seven days after its expiry.
            h.clock.advance(by: 30 * 86_400 + 7 * 86_400 + 60)
            await h.runJobs()
            #expect(try await h.rowCount("sessions") == 0)
        }
    }

    @Test("a processed notification's record goes after 30 days, a delivered webhook row after 7, a failed one stays")
    func recordsOfFinishedWork() async throws {
        try await OrchardHarness.withWebhooks(jobs: .byTest) { h, receiver in
            let user = h.emulator.makeUser()
            _ = try await h.signUp(user)
            let jti = "retained-\(UUID().uuidString)"
            let payload = try h.emulator.signNotification(type: "email-disabled", sub: user.sub, clientID: OrchardHarness.clientID, jti: jti)
            #expect(try await h.postNotification(payload).status == 200)
            await h.runJobs()
            #expect(try await h.inboxRow(jti)?.outcome == "processed")
            #expect(receiver.delivered.count == 1)
            #expect(try await h.rowCount("webhook_outbox WHERE status = 'delivered'") == 1)

            h.clock.advance(by: 6 * 86_400)
            await h.runJobs()
            #expect(try await h.rowCount("webhook_outbox") == 1, "a delivered row stays for 7 days")
            h.clock.advance(by: 2 * 86_400)
            await h.runJobs()
            #expect(try await h.rowCount("webhook_outbox") == 0)
            #expect(try await h.inboxRow(jti) != nil, "a processed record stays for 30 days")
            h.clock.advance(by: 23 * 86_400)
            await h.runJobs()
            #expect(try await h.inboxRow(jti) == nil)
        }
    }
}
