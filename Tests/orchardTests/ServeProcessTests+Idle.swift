import Foundation
import OrchardTesting
import Testing

extension ServeProcessTests {
    @Test("an idle serve with webhooks configured claims on its 1-second tick, not in a loop: it uses almost no CPU")
    func idleServeDoesNotSpin() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        // Webhooks run several passes at once; a pass that ended used to start the next one at once, forever, so an
        // idle server with webhooks configured claimed from an empty outbox in a tight loop (a core and hundreds of
        // transactions a second). Nothing listens at the URL: nothing is ever queued for it in this test.
        var environment = setup.environment
        environment["ORCHARD_WEBHOOK_URLS"] = "http://127.0.0.1:9/hooks"
        environment["ORCHARD_WEBHOOK_SECRET"] = WebhookReceiver.secret(seed: "idle-webhook-secret-0123456789ab")
        let serve = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
        defer { Task { await serve.kill() } }
        let before = try #require(serve.cpuSeconds)
        // A rate needs a span of time: 3 seconds is three ticks of every job kind. The loop used a whole core (about
        // 3 s of CPU here); an idle server uses a few hundredths, so the bound leaves a wide margin on a loaded machine.
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(3) {
            try await Task.sleep(for: .milliseconds(250))
            #expect(!serve.hasExited)
        }
        let used = try #require(serve.cpuSeconds) - before
        #expect(used < 0.6, "serve used \(used) s of CPU in 3 s while idle")
    }
}
