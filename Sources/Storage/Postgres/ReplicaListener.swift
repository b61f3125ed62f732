import ServiceLifecycle

/// The replicas' listener (``ReplicaChannel``) as a service of the server's service group: it listens while the
/// server serves, stops after it (the group stops services in reverse order), and withdraws this replica's
/// registration when it stops, so that no change waits for a replica that is gone.
struct ReplicaListener: Service, CustomStringConvertible {
    let channel: ReplicaChannel
    /// The pool the self-test's `NOTIFY` is sent over.
    let database: any DatabaseClient

    var description: String { "ReplicaListener" }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await channel.listen(selfTestOver: database)
        }
    }
}
