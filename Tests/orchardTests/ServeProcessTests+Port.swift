import Foundation
import OrchardTesting
import Testing

extension ServeProcessTests {
    @Test("a serve whose port another test's serve holds is never taken for ready: its start fails with the bind error")
    func portTakenByAnotherServe() async throws {
        // Tests run side by side and pick free ports; two may pick the same one. The later serve exits with "Address
        // already in use", but until it does, the earlier one answers /health/ready on that port, and a start that took
        // that answer for its own had the test talk to a stranger with another emulator's keys (OrchardKit's CI run saw
        // "no key in Apple's key set"). With the port given, as a restart gives it, there is nothing to retry.
        let holder = try await Setup.start()
        defer { Task { await holder.stop() } }
        let held = try await ServeProcess.start(environment: holder.environment, logDirectory: holder.directory.path, http: holder.http)
        defer { Task { await held.kill() } }

        let other = try await Setup.start()
        defer { Task { await other.stop() } }
        let error = await #expect(throws: ServeProcessError.self) {
            _ = try await ServeProcess.start(
                environment: other.environment,
                port: held.port,
                logDirectory: other.directory.path,
                http: other.http
            )
        }
        #expect(error?.description.contains("Address already in use") == true, "\(error?.description ?? "")")
        #expect(!held.hasExited)
    }
}
