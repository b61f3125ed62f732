import Synchronization

extension AppleEmulator {
    /// Ends the user's grant as if they stopped using Sign in with Apple for the app in Apple ID settings: the grant's
    /// refresh and access tokens stop working (a refresh answers `invalid_grant`) and its unused codes die.
    ///
    /// - Parameter clientID: The client whose grant ends; every client's when nil.
    /// - Returns: How many grants ended.
    @discardableResult
    public func revokeGrant(sub: String, clientID: String? = nil) -> Int {
        state.withLock { $0.revokeGrants(sub: sub, clientID: clientID) }
    }

    /// Makes the next `count` calls to `endpoint` fail as `failure` says, after any failures already queued for it.
    /// A failed call changes nothing else (a code is not consumed, a token not revoked), and is logged.
    public func injectFailure(endpoint: EmulatorEndpoint, failure: EmulatorFailure, count: Int = 1) {
        state.withLock { $0.failures.inject(failure, into: endpoint, count: count) }
    }

    /// Forgets every queued failure.
    public func clearFailures() {
        state.withLock { $0.failures.clear() }
    }

    /// Answers the next `nextExchanges` successful code exchanges without a `refresh_token` (replacing any earlier
    /// count).
    public func omitRefreshToken(nextExchanges: Int) {
        state.withLock { $0.omitRefreshTokens(nextExchanges: nextExchanges) }
    }

    /// Sets the delay before Apple's endpoints answer (the `/_emulator/` control API is never delayed).
    public func setLatency(_ latency: Duration) {
        state.withLock { $0.latency = max(.zero, latency) }
    }

    /// Holds every call to Apple's token, revoke, keys and transfer endpoints that `matches`, once logged, until
    /// ``releaseHeldCalls()``: a test that needs something to happen while a call is at Apple holds it there for as
    /// long as that takes, instead of a latency it guesses. (`/auth/authorize`, the browser's page, is never held.)
    public func holdCalls(where matches: @escaping @Sendable (EmulatorCall) -> Bool) {
        state.withLock { $0.heldCalls = matches }
    }

    /// Lets every held call go on (and holds no more).
    public func releaseHeldCalls() {
        state.withLock { $0.heldCalls = nil }
    }

    /// The delay before Apple's endpoints answer.
    public var latency: Duration {
        state.withLock { $0.latency }
    }

    /// Sets where notifications are posted (e.g. once the receiving server's port is known); nil stops sending.
    public func setNotifyURL(_ url: String?) {
        state.withLock { $0.notifyURL = url }
    }

    /// Where notifications are posted.
    public var notifyURL: String? {
        state.withLock { $0.notifyURL }
    }

    /// Every call to Apple's endpoints since the log was last cleared, in the order they arrived.
    public func calls() -> [EmulatorCall] {
        state.withLock { $0.callLog.calls }
    }

    /// The calls to one endpoint, in the order they arrived.
    public func calls(to endpoint: EmulatorEndpoint) -> [EmulatorCall] {
        state.withLock { $0.callLog.calls.filter { $0.endpoint == endpoint } }
    }

    /// Empties the call log.
    public func clearCalls() {
        state.withLock { $0.callLog.clear() }
    }

    /// Whether `token` (a refresh or access token the emulator issued) has stopped working because its grant ended,
    /// through `/auth/revoke` or ``revokeGrant(sub:clientID:)``. False for a token the emulator never issued.
    public func isRevoked(token: String) -> Bool {
        state.withLock { $0.isRevoked(token: token) }
    }

    /// The refresh and access tokens the emulator issued to `sub` (at `clientID`, or at every client), valid or not,
    /// in the order they were issued.
    public func issuedTokens(sub: String, clientID: String? = nil) -> [String] {
        state.withLock { $0.issuedTokens(sub: sub, clientID: clientID) }
    }

    /// Everything the emulator handed out that identifies a user or grants access: each user's subject, email and
    /// names, every authorization code, refresh and access token, and every identity token and notification it signed.
    /// Tests look for these where they must never appear, such as Orchard's logs.
    public func issuedSecrets() -> [String] {
        state.withLock { $0.secrets() }
    }

    /// The tokens whose `/auth/revoke` request ended a grant, in order: one per grant that the client revoked.
    public func revokedTokens() -> [String] {
        state.withLock { $0.revocations.filter(\.wasValid).map(\.token) }
    }

    /// Every token `/auth/revoke` accepted from an authenticated client, valid or not, in order.
    public func revocations() -> [EmulatorRevocation] {
        state.withLock { $0.revocations }
    }

    /// How many times `/auth/revoke` accepted `token`: while it was valid (ending its grant) and after.
    public func revocationCount(token: String) -> EmulatorRevocationCount {
        state.withLock { state in
            state.revocations.filter { $0.token == token }.reduce(into: EmulatorRevocationCount()) { count, revocation in
                if revocation.wasValid {
                    count.whileValid += 1
                } else {
                    count.whileInvalid += 1
                }
            }
        }
    }
}
