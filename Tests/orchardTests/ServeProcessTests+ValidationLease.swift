import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import OrchardTesting
import Testing

extension ServeProcessTests {
    @Test("kill -9 with refresh validations in flight: after a restart each is tried again once its 15 s lease ends, not before")
    func validationTakenOverWithinLease() async throws {
        let setup = try await Setup.start(timeoutHold: .seconds(60))
        defer { Task { await setup.stop() } }
        var environment = setup.environment
        environment["ORCHARD_REFRESH_VALIDATION_INTERVAL"] = "2"
        let first = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
        let client = setup.client(first)
        for _ in 0..<24 {
            #expect(try await client.signIn(setup.emulator.makeUser(), clientID: "com.example.orchard.app").response.status == 200)
        }
        // Apple stops answering: the next pass's validations hang in flight.
        setup.emulator.injectFailure(endpoint: .token, failure: .timeout, count: 1000)
        func held() -> [EmulatorCall] {
            setup.emulator.calls(to: .token).filter { $0.grantType == "refresh_token" && $0.status == nil }
        }
        #expect(await eventually { held().count >= 16 }, "\(first.logText)")
        let inFlight = held()
        await first.kill()
        setup.emulator.clearFailures()
        let second = try await ServeProcess.start(
            environment: environment,
            port: first.port,
            logDirectory: setup.directory.path,
            http: setup.http
        )
        for call in inFlight {
            let token = try #require(call.refreshToken)
            func retried() -> EmulatorCall? {
                setup.emulator.calls(to: .token).first { $0.sequence > call.sequence && $0.refreshToken == token && $0.status != nil }
            }
            #expect(await eventually { retried() != nil }, "never validated again: \(second.logText)")
            let gap = try #require(retried()).time.timeIntervalSince(call.time)
            #expect(gap >= 14.5 && gap <= 17.5, "validated again \(gap) s after the call the killed replica held")
        }
        await second.kill()
    }
}
