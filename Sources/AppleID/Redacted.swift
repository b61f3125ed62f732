/// A value that must never reach a log, an error message or a debug dump: a token, an email, an Apple subject.
///
/// Redaction is by type, so nobody has to remember to leave a secret out of a log line: interpolating or dumping a
/// `Redacted` prints `<redacted>`. The value is reached only through ``value``.
public struct Redacted<Value: Sendable>: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The secret value itself; read it only to use it, never to print it.
    public let value: Value

    /// Wraps a secret value.
    public init(_ value: Value) {
        self.value = value
    }

    /// Always `<redacted>`.
    public var description: String { "<redacted>" }

    /// Always `<redacted>`.
    public var debugDescription: String { "<redacted>" }

    /// A mirror with no children, so `dump` shows nothing of the value.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension Redacted: Equatable where Value: Equatable {}
extension Redacted: Hashable where Value: Hashable {}
