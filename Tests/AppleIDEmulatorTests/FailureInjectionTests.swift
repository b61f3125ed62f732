import AppleIDEmulator
import Foundation
import NIOCore
import NIOHTTP1
import OrchardTesting
import Synchronization
import Testing

@Suite("Injected failures and latency")
struct FailureInjectionTests {
    @Test("an injected 503 hits exactly the next N calls, with an empty body, and consumes nothing")
    func statusFailure() async throws {
        try await EmulatorHarness.with { h in
            let code = try h.emulator.authorize(user: h.emulator.makeUser(), clientID: EmulatorHarness.appID).authorizationCode
            h.emulator.injectFailure(endpoint: .token, failure: .status(503), count: 2)
            for _ in 0..<2 {
                let down = try await h.exchange(code: code)
                #expect(down.status == 503)
                #expect(down.body.isEmpty)
            }
            #expect(try await h.exchange(code: code).status == 200)
            #expect(h.emulator.calls(to: .token).map(\.status) == [503, 503, 200])
            // Other endpoints were never affected.
            let answer1 = try await h.send(.GET, "/auth/keys")
            #expect(answer1.status == 200)
        }
    }

    @Test("an injected timeout holds the request past the client's deadline, for exactly N calls")
    func timeoutFailure() async throws {
        try await EmulatorHarness.with { h in
            h.emulator.injectFailure(endpoint: .keys, failure: .timeout, count: 1)
            let started = ContinuousClock.now
            await #expect(throws: (any Error).self) {
                _ = try await h.send(.GET, "/auth/keys", timeout: .milliseconds(300))
            }
            #expect(ContinuousClock.now - started >= .milliseconds(250))
            let answer2 = try await h.send(.GET, "/auth/keys")
            #expect(answer2.status == 200)
            let calls = h.emulator.calls(to: .keys)
            #expect(calls.count == 2)
            #expect(calls.first?.status == nil)
            #expect(calls.last?.status == 200)
        }
    }

    @Test("an injected Apple error answers 400 with that code for exactly N calls")
    func appleErrorFailure() async throws {
        try await EmulatorHarness.with { h in
            let (_, tokens) = try await h.signIn()
            let refreshToken = try #require(tokens["refresh_token"])
            h.emulator.injectFailure(endpoint: .revoke, failure: .appleError("invalid_client"), count: 1)
            let refused = try await h.revoke(refreshToken)
            #expect(refused.status == 400)
            #expect(refused.text == #"{"error":"invalid_client"}"#)
            #expect(!h.emulator.isRevoked(token: refreshToken))
            #expect(try await h.revoke(refreshToken).status == 200)
            #expect(h.emulator.revocationCount(token: refreshToken) == EmulatorRevocationCount(whileValid: 1, whileInvalid: 0))
        }
    }

    @Test("failures queue in order per endpoint, and clearFailures drops them")
    func queueAndClear() async throws {
        try await EmulatorHarness.with { h in
            h.emulator.injectFailure(endpoint: .keys, failure: .status(500), count: 1)
            h.emulator.injectFailure(endpoint: .keys, failure: .status(429), count: 1)
            h.emulator.injectFailure(endpoint: .revoke, failure: .status(503), count: 3)
            let answer3 = try await h.send(.GET, "/auth/keys")
            #expect(answer3.status == 500)
            let answer4 = try await h.send(.GET, "/auth/keys")
            #expect(answer4.status == 429)
            let answer5 = try await h.send(.GET, "/auth/keys")
            #expect(answer5.status == 200)
            h.emulator.clearFailures()
            #expect(try await h.revoke("r-unknown").status == 200)
        }
    }

    @Test("latency delays Apple's endpoints but not the control API")
    func latency() async throws {
        try await EmulatorHarness.with { h in
            h.emulator.setLatency(.milliseconds(400))
            let started = ContinuousClock.now
            let answer6 = try await h.send(.GET, "/auth/keys")
            #expect(answer6.status == 200)
            #expect(ContinuousClock.now - started >= .milliseconds(400))
            // The control API does not wait: it answers while a call to Apple's endpoint is still held. (An upper bound
            // on its own time failed on a loaded machine; the order of the two answers does not depend on load.)
            h.emulator.setLatency(.seconds(5))
            let heldAnswered = Mutex(false)
            let held = Task {
                let answer = try await h.send(.GET, "/auth/keys")
                heldAnswered.withLock { $0 = true }
                return answer.status
            }
            let answer7 = try await h.send(.GET, "/_emulator/calls")
            #expect(answer7.status == 200)
            #expect(!heldAnswered.withLock { $0 }, "the control API answered only after the held call")
            #expect(try await held.value == 200)
            h.emulator.setLatency(.zero)
            #expect(h.emulator.latency == .zero)
        }
    }

    @Test("starting on a port that is taken throws instead of hanging")
    func portTaken() async throws {
        try await EmulatorHarness.with { h in
            await #expect(throws: (any Error).self) {
                let second = try await h.emulator.start(port: h.server.port)
                await second.stop()
            }
        }
    }
}
