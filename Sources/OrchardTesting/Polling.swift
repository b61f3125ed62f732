import Foundation

/// Waits until `condition` holds, checking every 50 ms, for at most `timeout` seconds of real time: for background
/// work a test cannot step by itself. Returns whether it held.
@discardableResult
public func eventually(timeout: Double = 30, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}
