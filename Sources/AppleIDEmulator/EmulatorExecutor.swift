import NIOCore
import NIOPosix
import Synchronization

/// Threads of the emulators' own, on which a started emulator's server and handlers run (its task's executor
/// preference, which the server's child tasks inherit): in a test process whose concurrency pool is kept busy by other
/// tests, Apple's answers would otherwise wait behind their work, and a server under test, with its own deadline on each
/// call, would see an Apple that is late when only the test process was.
final class EmulatorExecutor: TaskExecutor {
    /// One for every emulator of the process.
    static let shared = EmulatorExecutor()

    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)

    /// Whether the caller runs on one of these threads.
    var isCurrent: Bool {
        guard let current = MultiThreadedEventLoopGroup.currentEventLoop else { return false }
        return group.makeIterator().contains { $0 === current }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        group.next().execute { job.runSynchronously(on: executor) }
    }
}

extension AppleEmulator {
    /// How many calls to Apple's endpoints this emulator took up on the emulators' own threads.
    var callsOnOwnThreads: Int {
        state.withLock { $0.callsOnOwnThreads }
    }
}
