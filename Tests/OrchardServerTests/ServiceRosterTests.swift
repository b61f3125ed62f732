import Logging
import OrchardServer
import OrchardTesting
import ServiceLifecycle
import Testing

/// The roster `serve` names its services still running from when a shutdown passes its limit.
@Suite("Which services are still running", .backendIndependent)
struct ServiceRosterTests {
    /// Runs until its gate opens, whatever graceful shutdown says: work that holds a shutdown up.
    struct Holding: Service {
        let gate: AsyncStream<Void>
        func run() async throws {
            for await _ in gate { return }
        }
    }

    /// Ends at graceful shutdown.
    struct Polite: Service {
        func run() async throws {
            try await gracefulShutdown()
        }
    }

    @Test("a service is named while it runs, also after a graceful shutdown the others obeyed, and not once it ended")
    func namesWhatRuns() async throws {
        let roster = ServiceRoster()
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let group = ServiceGroup(
            configuration: .init(
                services: [roster.track(Polite(), as: "Polite"), roster.track(Holding(gate: gate), as: "Holding")],
                logger: Logger(label: "test")
            )
        )
        let running = Task { try await group.run() }
        #expect(await eventually { roster.stillRunning == ["Holding", "Polite"] }, "\(roster.stillRunning)")

        await group.triggerGracefulShutdown()
        // The group stops its services in reverse order: Holding first, which does not end, so it stays named.
        #expect(roster.stillRunning.contains("Holding"))

        open.yield()
        try await running.value
        #expect(roster.stillRunning.isEmpty, "\(roster.stillRunning)")
    }

    @Test("a service that fails leaves the roster too")
    func failureLeaves() async throws {
        struct Failing: Service {
            struct Failure: Error {}
            func run() async throws { throw Failure() }
        }
        let roster = ServiceRoster()
        await #expect(throws: Failing.Failure.self) { try await roster.track(Failing(), as: "Failing").run() }
        #expect(roster.stillRunning.isEmpty)
    }
}
