/// A browser's visit to `/auth/authorize`: Apple's query parameters, and the emulator's own test-only ones that stand
/// for what the user would do on Apple's page.
public struct WebAuthorizationRequest: Sendable, Hashable {
    /// `response_type`: `code`, or `code id_token`.
    public var responseType: String?
    /// `response_mode`: the emulator answers `form_post` only (what Apple requires when an id_token or a scope is
    /// asked for).
    public var responseMode: String?
    /// `client_id`: the Services ID.
    public var clientID: String?
    /// `redirect_uri`: where the form is posted.
    public var redirectURI: String?
    /// `state`, echoed as is.
    public var state: String?
    /// `nonce`, put into the identity token exactly as given.
    public var nonce: String?
    /// `scope`: `name`, `email`, both or neither.
    public var scope: String?
    /// `login_hint`: who consents. A subject or an email the emulator knows picks that user; an unknown email or
    /// subject makes a user with it; absent, ``AppleEmulator/webDemoUser`` consents.
    public var loginHint: String?
    /// Test-only `emulator_error`: post this error instead of consenting, e.g. `user_cancelled_authorize`.
    public var error: String?
    /// Test-only `emulator_first_name` / `emulator_last_name`: the name a user made from `login_hint` shares.
    public var firstName: String?
    /// See ``firstName``.
    public var lastName: String?

    /// Reads the query of `/auth/authorize`.
    public init(query: [String: String]) {
        responseType = query["response_type"]
        responseMode = query["response_mode"]
        clientID = query["client_id"]
        redirectURI = query["redirect_uri"]
        state = query["state"]
        nonce = query["nonce"]
        scope = query["scope"]
        loginHint = query["login_hint"]
        error = query["emulator_error"]
        firstName = query["emulator_first_name"]
        lastName = query["emulator_last_name"]
    }
}
