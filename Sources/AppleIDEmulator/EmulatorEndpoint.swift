/// Apple's endpoints that the emulator serves and that failures can be injected into.
public enum EmulatorEndpoint: String, Sendable, Hashable, Codable, CaseIterable {
    /// `GET /auth/keys`, Apple's JWKS.
    case keys
    /// `POST /auth/token`, code exchange and refresh.
    case token
    /// `POST /auth/revoke`.
    case revoke
    /// `GET /auth/authorize`, the web flow's consent page (answered with Apple's auto-submitting form post).
    case authorize
    /// `POST /auth/usermigrationinfo`, app transfer's transfer identifiers and their exchange.
    case userMigrationInfo = "usermigrationinfo"

    /// The endpoint's path, e.g. `/auth/token`.
    public var path: String { "/auth/\(rawValue)" }
}
