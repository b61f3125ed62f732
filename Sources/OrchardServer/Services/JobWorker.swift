public import Logging
public import ServiceLifecycle

/// A background worker: runs its pass at start-up, whenever a request wakes it, and at least every second; a pass
/// that found a full batch runs again at once. Stops on graceful shutdown.
public struct JobWorker: Service {
    let name: String
    let wakeups: AsyncStream<Void>
    let pass: @Sendable (Logger) async -> Int
    let batchSize: Int
    let logger: Logger

    /// Creates a worker.
    ///
    /// - Parameters:
    ///   - pass: claims and handles due work; returns how many items it claimed.
    public init(name: String, wakeups: AsyncStream<Void>, batchSize: Int = 32, logger: Logger, pass: @escaping @Sendable (Logger) async -> Int) {
        self.name = name
        self.wakeups = wakeups
        self.batchSize = batchSize
        self.logger = logger
        self.pass = pass
    }

    /// Runs until graceful shutdown.
    public func run() async throws {
        var workerLogger = self.logger
        workerLogger[metadataKey: "worker"] = "\(name)"
        let logger = workerLogger
        await withTaskGroup(of: Void.self) { group in
            let (ticks, tick) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            group.addTask {
                while !Task.isCancelled {
                    tick.yield()
                    try? await Task.sleep(for: .seconds(1))
                }
                tick.finish()
            }
            group.addTask {
                for await _ in self.wakeups {
                    tick.yield()
                }
            }
            group.addTask {
                await cancelWhenGracefulShutdown {
                    for await _ in ticks {
                        while await self.pass(logger) >= self.batchSize, !Task.isCancelled {}
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
    }
}

/// Runs `body` until it returns or graceful shutdown begins, then cancels it.
func cancelWhenGracefulShutdown(_ body: @escaping @Sendable () async -> Void) async {
    await withTaskGroup(of: Void.self) { group in
        group.addTask { await body() }
        group.addTask { try? await gracefulShutdown() }
        await group.next()
        group.cancelAll()
    }
}
