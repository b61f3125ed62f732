import Dispatch

/// Runs blocking work (a child process and its `waitpid`, `pg_ctl`) on a Dispatch thread and awaits it without holding
/// a thread of Swift's concurrency pool.
///
/// The pool has one thread per core. Tests run in parallel, and two of them blocked at once on a 2-core machine would
/// leave no thread for the other tests' tasks: an in-process emulator would stop answering and unrelated tests would
/// fail on deadlines.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result { try work() })
        }
    }
}
