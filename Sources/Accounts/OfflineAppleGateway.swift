public import AppleID

/// The gateway of operator commands that only read the database (`orchard accounts list/show`): every call to Apple
/// is refused with `apple_unavailable`, so such a command can run without Apple's settings.
public struct OfflineAppleGateway: AppleGateway {
    /// Creates the gateway.
    public init() {}

    private var refusal: AccountsError { AccountsError(.appleUnavailable, "this command does not talk to Apple") }

    /// Refused.
    public func verifyIdentityToken(_ token: String, expectedAudience: String?) async throws -> AppleIdentityClaims { throw refusal }
    /// Refused.
    public func verifyNotification(_ jws: String) async throws -> AppleNotification { throw refusal }
    /// Refused.
    public func exchangeCode(_ code: Redacted<String>, clientID: String, redirectURI: String?) async throws -> AppleTokenResponse {
        throw refusal
    }
    /// Refused.
    public func validateRefreshToken(_ token: Redacted<String>, clientID: String) async throws -> AppleTokenResponse { throw refusal }
    /// Refused.
    public func revoke(_ token: Redacted<String>, hint: TokenTypeHint, clientID: String, deadline: Duration?) async throws {
        throw refusal
    }
    /// Refused.
    public func transferSub(for sub: Redacted<String>, target: String, clientID: String) async throws -> Redacted<String> {
        throw refusal
    }
    /// Refused.
    public func exchangeTransferSub(_ transferSub: Redacted<String>, clientID: String) async throws -> AppleTransferExchange {
        throw refusal
    }
}
