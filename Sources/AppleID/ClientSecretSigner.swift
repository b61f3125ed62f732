import Foundation
import JWTKit

/// One developer team's Sign in with Apple key and the client ids (App IDs, Services IDs) that belong to it.
///
/// It describes itself without its key, since anything a library may log (a configuration, a service) may reach it.
public struct AppleTeam: Sendable, Equatable, CustomStringConvertible {
    /// The 10-character team id: a client secret's `iss`.
    public var teamID: String
    /// The key's id: a client secret's header `kid`.
    public var keyID: String
    /// The `.p8` file's contents: a PKCS#8 PEM P-256 private key.
    public var privateKeyPEM: String
    /// The client ids of the team's apps; each belongs to exactly one team.
    public var clientIDs: [String]

    /// Creates a team.
    public init(teamID: String, keyID: String, privateKeyPEM: String, clientIDs: [String]) {
        self.teamID = teamID
        self.keyID = keyID
        self.privateKeyPEM = privateKeyPEM
        self.clientIDs = clientIDs
    }

    /// The team, its key id and its client ids; the key shown as `<redacted>`.
    public var description: String { "AppleTeam(teamID: \(teamID), keyID: \(keyID), privateKeyPEM: <redacted>, clientIDs: \(clientIDs))" }
}

/// Signs the client secrets Apple's REST endpoints authenticate Orchard with, and keeps them until they are half spent.
///
/// A client secret is an ES256 JWT signed with the Sign in with Apple key of the team that owns the client id: header
/// `alg` ES256 and `kid` the key id; claims `iss` the team id, `sub` the client id, `aud` `https://appleid.apple.com`,
/// `iat` now and `exp` now + lifetime. One is cached per client id and replaced once less than half its lifetime
/// remains, by the injected clock.
public actor ClientSecretSigner {
    /// The longest lifetime Apple accepts: 15,777,000 seconds (about six months).
    public static let maximumLifetime: Duration = .seconds(15_777_000)

    /// How long each secret is valid.
    public let lifetime: Duration

    private struct LoadedTeam: Sendable {
        let team: AppleTeam
        let signingKey: ES256PrivateKey
    }

    private let teams: [LoadedTeam]
    /// Whether a client id no team lists is signed by the first team (a single team configured without client ids).
    private let signsAnyClientID: Bool
    private var signingKeys: [String: JWTKeyCollection] = [:]
    private let clock: any WallClock
    private var cache: [String: (secret: Redacted<String>, issuedAt: Date)] = [:]

    /// Loads one team's signing key; it signs for any client id.
    /// - Parameters:
    ///   - teamID: The developer team id (`APPLE_TEAM_ID`).
    ///   - keyID: The key's id (`APPLE_KEY_ID`).
    ///   - privateKeyPEM: The `.p8` file's contents: a PKCS#8 PEM P-256 private key.
    ///   - clock: The clock that dates secrets and decides when to renew them.
    ///   - lifetime: How long each secret is valid; more than zero and at most ``maximumLifetime``.
    /// - Throws: `invalid_configuration` for a key that is not a P-256 PEM private key, or a lifetime out of range.
    public init(
        teamID: String,
        keyID: String,
        privateKeyPEM: String,
        clock: any WallClock,
        lifetime: Duration = .seconds(86_400)
    ) throws(AppleIDError) {
        try self.init(
            teams: [AppleTeam(teamID: teamID, keyID: keyID, privateKeyPEM: privateKeyPEM, clientIDs: [])],
            clock: clock,
            lifetime: lifetime
        )
    }

    /// Loads every team's signing key; a client id is signed by the team that lists it.
    /// - Parameters:
    ///   - teams: The teams, at least one; a single team with no client ids signs for any client id.
    ///   - clock: The clock that dates secrets and decides when to renew them.
    ///   - lifetime: How long each secret is valid; more than zero and at most ``maximumLifetime``.
    /// - Throws: `invalid_configuration` for a key that is not a P-256 PEM private key, an empty team or key id, a
    ///   client id listed by two teams, or a lifetime out of range.
    public init(teams: [AppleTeam], clock: any WallClock, lifetime: Duration = .seconds(86_400)) throws(AppleIDError) {
        guard lifetime > .zero, lifetime <= Self.maximumLifetime else {
            throw .invalidConfiguration("the client secret lifetime must be more than 0 and at most 15777000 seconds, not \(lifetime)")
        }
        guard !teams.isEmpty else { throw .invalidConfiguration("no developer team is configured") }
        var loaded: [LoadedTeam] = []
        var owners: Set<String> = []
        for team in teams {
            guard !team.teamID.isEmpty, !team.keyID.isEmpty else {
                throw .invalidConfiguration("the team id and the key id must not be empty")
            }
            for clientID in team.clientIDs {
                guard owners.insert(clientID).inserted else {
                    throw .invalidConfiguration("the client id \(clientID) is listed by two teams")
                }
            }
            do {
                loaded.append(LoadedTeam(team: team, signingKey: try ES256PrivateKey(pem: team.privateKeyPEM)))
            } catch {
                throw .invalidConfiguration("the Sign in with Apple key is not a PKCS#8 PEM P-256 private key (a .p8 file)")
            }
        }
        self.teams = loaded
        self.signsAnyClientID = teams.count == 1 && teams[0].clientIDs.isEmpty
        self.lifetime = lifetime
        self.clock = clock
    }

    /// The team that owns `clientID`, or `nil` when no configured team does.
    private func owner(of clientID: String) -> LoadedTeam? {
        teams.first { $0.team.clientIDs.contains(clientID) } ?? (signsAnyClientID ? teams[0] : nil)
    }

    /// A client secret for `clientID`, signed by its team's key: the cached one while more than half its lifetime
    /// remains, else a new one.
    /// - Throws: `invalid_configuration` for a client id no configured team owns, or if signing fails (it does not with
    ///   a key that loaded).
    public func secret(for clientID: String) async throws(AppleIDError) -> Redacted<String> {
        let now = clock.now()
        if let cached = cache[clientID] {
            let age = now.timeIntervalSince(cached.issuedAt)
            if age >= 0, age < lifetime.seconds / 2 { return cached.secret }
        }
        let secret = try await sign(for: clientID, at: now)
        cache[clientID] = (secret, Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down)))
        return secret
    }

    /// A client secret for `clientID` signed now and never cached: app transfer's calls each send a fresh one.
    /// - Throws: as ``secret(for:)``.
    public func freshSecret(for clientID: String) async throws(AppleIDError) -> Redacted<String> {
        try await sign(for: clientID, at: clock.now())
    }

    private func sign(for clientID: String, at now: Date) async throws(AppleIDError) -> Redacted<String> {
        guard let owner = owner(of: clientID) else {
            throw .invalidConfiguration("the client id \(clientID) belongs to no configured team")
        }
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let claims = ClientSecretClaims(
            iss: owner.team.teamID,
            sub: clientID,
            aud: AppleTokenVerifier.appleIssuer,
            iat: issuedAt,
            exp: issuedAt + lifetime.components.seconds
        )
        var header = JWTHeader()
        header.alg = "ES256"
        header.kid = owner.team.keyID
        do {
            let token = try await collection(of: owner).sign(claims, kid: JWKIdentifier(string: owner.team.keyID), header: header)
            return Redacted(token)
        } catch {
            throw .invalidConfiguration("the client secret could not be signed")
        }
    }

    /// The key collection holding one team's signing key (built on first use: adding to it needs `await`).
    private func collection(of owner: LoadedTeam) async -> JWTKeyCollection {
        if let made = signingKeys[owner.team.teamID] { return made }
        let made = await JWTKeyCollection().add(ecdsa: owner.signingKey, kid: JWKIdentifier(string: owner.team.keyID))
        signingKeys[owner.team.teamID] = made
        return made
    }
}
