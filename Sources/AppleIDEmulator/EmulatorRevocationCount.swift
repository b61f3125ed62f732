/// How often `/auth/revoke` accepted one token: the proof behind "revoked exactly once".
public struct EmulatorRevocationCount: Sendable, Hashable {
    /// Requests that found the token valid and ended its grant.
    public var whileValid: Int
    /// Requests that found the token already invalid (or unknown, or another client's) and changed nothing.
    public var whileInvalid: Int

    /// Every 200 answered for this token.
    public var total: Int { whileValid + whileInvalid }

    /// Creates a count.
    public init(whileValid: Int = 0, whileInvalid: Int = 0) {
        self.whileValid = whileValid
        self.whileInvalid = whileInvalid
    }
}
