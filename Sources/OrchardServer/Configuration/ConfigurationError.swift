/// A setting that is missing or wrong: one line naming the setting and what is wrong (exit code 2 at start-up).
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// The setting's name, as the contract spells it (e.g. `APPLE_TEAM_ID`).
    public let setting: String
    /// What is wrong with it, without echoing a secret.
    public let problem: String

    /// Creates the error.
    public init(setting: String, problem: String) {
        self.setting = setting
        self.problem = problem
    }

    /// `SETTING: problem`.
    public var description: String { "\(setting): \(problem)" }
}
