public import AppleID
import Crypto
import Foundation

/// A developer team the emulator knows: the key whose client secrets it accepts, and the client ids that belong to it.
public struct EmulatorTeam: Sendable {
    /// The team id client secrets must carry as `iss`.
    public var teamID: String
    /// The key id client secrets must carry as header `kid`.
    public var keyID: String
    /// The team's P-256 key as PEM (public, or the `.p8` itself).
    public var clientPublicKeyPEM: String
    /// The team's App IDs and Services IDs.
    public var clientIDs: [String]

    /// Creates a team.
    public init(teamID: String, keyID: String, clientPublicKeyPEM: String, clientIDs: [String]) {
        self.teamID = teamID
        self.keyID = keyID
        self.clientPublicKeyPEM = clientPublicKeyPEM
        self.clientIDs = clientIDs
    }

    /// The team's public key.
    /// - Throws: ``AppleEmulatorError/Kind/invalidConfiguration`` when the PEM is neither a P-256 public key nor a
    ///   P-256 private key.
    func publicKey() throws -> P256.Signing.PublicKey {
        let pem = clientPublicKeyPEM.trimmingCharacters(in: .whitespacesAndNewlines)
        do {
            if pem.contains("PRIVATE KEY-----") {
                return try P256.Signing.PrivateKey(pemRepresentation: pem).publicKey
            }
            return try P256.Signing.PublicKey(pemRepresentation: pem)
        } catch {
            throw AppleEmulatorError.invalidConfiguration(
                "the client key of team \(teamID) is not a P-256 public or private key in PEM",
                underlying: error
            )
        }
    }
}

/// How an ``AppleEmulator`` behaves: which clients it accepts, and how long what it issues lives.
///
/// The first team is given by ``teamID``, ``keyID``, ``clientIDs`` and ``clientPublicKeyPEM``; ``otherTeams`` adds
/// more, each accepting client secrets signed by its own key for its own client ids.
public struct AppleEmulatorConfiguration: Sendable {
    /// The developer team id that client secrets must carry as `iss`.
    public var teamID: String
    /// The id of the client's Sign in with Apple key, which client secrets must carry as header `kid`.
    public var keyID: String
    /// The App IDs and Services IDs the emulator knows; a client secret's `sub` must be one of them.
    public var clientIDs: [String]
    /// The client's P-256 key as PEM: its public key (`PUBLIC KEY`), or the private key itself (a `.p8`, PKCS#8
    /// `PRIVATE KEY`, or SEC 1 `EC PRIVATE KEY`), from which the public key is derived.
    public var clientPublicKeyPEM: String
    /// How long Apple's endpoints (`/auth/keys`, `/auth/token`, `/auth/revoke`) wait before answering.
    public var latency: Duration
    /// Where notifications are posted, e.g. Orchard's `/v1/apple/notifications`; changeable later with
    /// ``AppleEmulator/setNotifyURL(_:)``.
    public var notifyURL: String?
    /// The emulator's notion of now, for `iat`/`exp`, code lifetimes and client-secret expiry.
    public var clock: any WallClock
    /// `exp - iat` of identity tokens: 24 hours, as Apple has issued them since 2021.
    public var identityTokenLifetime: Duration
    /// How long an authorization code can be exchanged: 5 minutes, as at Apple.
    public var codeLifetime: Duration
    /// How long a request hit by an injected ``EmulatorFailure/timeout`` is held before the emulator gives up and
    /// answers 504 (it also lets go when the server shuts down).
    public var timeoutHold: Duration
    /// Teams besides the first.
    public var otherTeams: [EmulatorTeam]
    /// The organization of every user the emulator makes (`--org-id`): a Work & School installation, whose identity
    /// tokens carry `org_id` (Managed Apple Accounts); `nil` for consumer Apple IDs.
    public var orgID: String? = nil
    /// The domain of the private-relay addresses it makes (`--relay-domain`): `privaterelay.appleid.com`, or Apple's
    /// newer `private.icloud.com`.
    public var relayDomain: String = EmulatedUser.privateRelayDomain

    /// Creates a configuration.
    public init(
        teamID: String,
        keyID: String,
        clientIDs: [String],
        clientPublicKeyPEM: String,
        latency: Duration = .zero,
        notifyURL: String? = nil,
        clock: any WallClock = SystemWallClock(),
        identityTokenLifetime: Duration = .seconds(86_400),
        codeLifetime: Duration = .seconds(300),
        timeoutHold: Duration = .seconds(30),
        otherTeams: [EmulatorTeam] = []
    ) {
        self.otherTeams = otherTeams
        self.teamID = teamID
        self.keyID = keyID
        self.clientIDs = clientIDs
        self.clientPublicKeyPEM = clientPublicKeyPEM
        self.latency = latency
        self.notifyURL = notifyURL
        self.clock = clock
        self.identityTokenLifetime = identityTokenLifetime
        self.codeLifetime = codeLifetime
        self.timeoutHold = timeoutHold
    }

    /// Makes a fresh P-256 client key: the private key as PKCS#8 PEM (what Apple's `.p8` download holds) and its
    /// public key as PEM.
    public static func makeClientKey() -> (privateKeyPEM: String, publicKeyPEM: String) {
        let key = P256.Signing.PrivateKey()
        return (key.pemRepresentation, key.publicKey.pemRepresentation)
    }

    /// Every team, the first one first.
    public var teams: [EmulatorTeam] {
        [EmulatorTeam(teamID: teamID, keyID: keyID, clientPublicKeyPEM: clientPublicKeyPEM, clientIDs: clientIDs)] + otherTeams
    }

    /// Every team's client ids.
    public var allClientIDs: [String] { teams.flatMap(\.clientIDs) }
}
