/// What a web-flow state stood for, once taken: the nonce the identity token must carry and where the browser returns.
public struct PendingWebFlow: Sendable, Equatable {
    /// The raw nonce Orchard issued for this authorization (the web flow passes it to Apple as is).
    public var nonce: String
    /// The path on this site the browser returns to.
    public var returnTo: String

    /// Creates a pending authorization.
    public init(nonce: String, returnTo: String) {
        self.nonce = nonce
        self.returnTo = returnTo
    }
}
