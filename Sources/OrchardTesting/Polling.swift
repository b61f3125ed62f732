import Foundation

/// Waits until `condition` holds, checking every 50 ms, for at most `timeout` seconds of real time (90 by default):
/// for background work a test cannot step by itself. Returns whether it held.
///
/// The default is for loaded machines: with eight tests at once beside a release build, work that takes milliseconds
/// on a quiet machine can take many seconds, and a test must not fail on a deadline it is not about. A state that
/// arrives ends the wait at once, so a long deadline costs a passing test nothing; no test waits for a state that
/// must not arrive (to show that nothing happens, drive the jobs with ``JobDriving/byTest`` and
/// ``OrchardHarness/runJobs()``).
@discardableResult
public func eventually(timeout: Double = 90, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}
