import Foundation

/// Waits until `condition` holds, checking every 50 ms, for at most `timeout` seconds of real time, and never less
/// than 90: for background work a test cannot step by itself. Returns whether it held.
///
/// The floor is for loaded machines: with eight tests at once beside a release build, work that takes milliseconds
/// on a quiet machine took over 10 s, and a test failed on a deadline it was not about. A state that arrives ends the
/// wait at once, so the floor costs a passing test nothing; no test waits for a state that must not arrive.
@discardableResult
public func eventually(timeout: Double = 30, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(max(timeout, 90))
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}
