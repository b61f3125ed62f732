/// What can go wrong when setting up or driving the emulator (never an answer to an HTTP client: those are Apple's
/// error bodies).
public struct AppleEmulatorError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure, stable for tests to compare.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidConfiguration
            case unknownClient
            case invalidClaims
            case signingFailed
            case noNotifyURL
            case notificationDeliveryFailed
            case serverDidNotStart
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// A configuration value is unusable (e.g. the client key PEM, an empty client id list).
        public static let invalidConfiguration = Kind(.invalidConfiguration)
        /// A client id that the configuration does not list.
        public static let unknownClient = Kind(.unknownClient)
        /// Claims or header values given to a signing call cannot be written as JSON.
        public static let invalidClaims = Kind(.invalidClaims)
        /// The RSA signature could not be made.
        public static let signingFailed = Kind(.signingFailed)
        /// A notification was to be sent, but no notification URL is set.
        public static let noNotifyURL = Kind(.noNotifyURL)
        /// The notification POST did not get an answer.
        public static let notificationDeliveryFailed = Kind(.notificationDeliveryFailed)
        /// The HTTP server stopped before it was listening.
        public static let serverDidNotStart = Kind(.serverDidNotStart)

        /// The kind's name.
        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public let kind: Kind
    /// What went wrong, for a person.
    public let reason: String
    /// The error that caused this one, if any.
    public let underlying: (any Error)?

    /// Creates an error.
    public init(_ kind: Kind, reason: String, underlying: (any Error)? = nil) {
        self.kind = kind
        self.reason = reason
        self.underlying = underlying
    }

    /// `kind: reason`, plus the underlying error when there is one.
    public var description: String {
        if let underlying {
            return "\(kind): \(reason) (\(underlying))"
        }
        return "\(kind): \(reason)"
    }

    /// An ``Kind/invalidConfiguration`` error.
    static func invalidConfiguration(_ reason: String, underlying: (any Error)? = nil) -> Self {
        .init(.invalidConfiguration, reason: reason, underlying: underlying)
    }

    /// An ``Kind/invalidClaims`` error.
    static func invalidClaims(_ reason: String) -> Self {
        .init(.invalidClaims, reason: reason)
    }
}
