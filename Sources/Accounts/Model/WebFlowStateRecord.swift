public import Foundation

/// A web-flow authorization in progress, kept between the redirect to Apple and Apple's form post back.
///
/// Apple's form post is cross-site, so no `SameSite=Lax` cookie comes with it: the state is found by its hash alone.
public struct WebFlowStateRecord: Sendable, Equatable {
    /// SHA-256 (lowercase hex) of the `state` value sent to Apple; the value itself is never stored.
    public var stateHash: String
    /// The raw nonce sent to Apple, sealed under the vault and bound to ``stateHash``.
    public var sealedNonce: String
    /// The path on this site the browser returns to.
    public var returnTo: String
    /// When the state stops being accepted.
    public var expiresAt: Date

    /// Creates a record.
    public init(stateHash: String, sealedNonce: String, returnTo: String, expiresAt: Date) {
        self.stateHash = stateHash
        self.sealedNonce = sealedNonce
        self.returnTo = returnTo
        self.expiresAt = expiresAt
    }
}
