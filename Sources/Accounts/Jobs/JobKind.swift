/// The name of one kind of background job: its wake-up channel, the `worker` in its log lines and the `kind` of
/// `orchard_jobs_total`.
///
/// Each kind declares its own value next to its handler (`extension JobKind { static let purges = ... }`), so a new kind
/// touches no shared list.
public struct JobKind: Hashable, Sendable, CustomStringConvertible {
    /// The kind's name (`revocations`, `notifications`, `webhooks`, `refresh-validation`, ...).
    public let name: String

    /// Creates a kind.
    public init(_ name: String) {
        self.name = name
    }

    /// The name.
    public var description: String { name }
}
