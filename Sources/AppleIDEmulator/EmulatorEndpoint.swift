/// Apple's REST endpoints that the emulator serves and that failures can be injected into.
///
/// `/auth/authorize` and `/auth/usermigrationinfo` join this list when they are emulated.
public enum EmulatorEndpoint: String, Sendable, Hashable, Codable, CaseIterable {
    /// `GET /auth/keys`, Apple's JWKS.
    case keys
    /// `POST /auth/token`, code exchange and refresh.
    case token
    /// `POST /auth/revoke`.
    case revoke

    /// The endpoint's path, e.g. `/auth/token`.
    public var path: String { "/auth/\(rawValue)" }
}
