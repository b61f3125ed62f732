import AppleID
public import AsyncHTTPClient
import Foundation
public import Logging
import Synchronization

/// A stand-in for Apple's Sign in with Apple endpoints, for Orchard's demo and tests.
///
/// It mints what a device would get from Apple (``authorize(user:clientID:nonce:redirectURI:)``), serves Apple's
/// REST endpoints over HTTP (``makeApplication(host:port:onServerRunning:)``, ``start(host:port:)``) exactly as
/// `apple-wire-formats.md` describes them, signs and sends server-to-server notifications, and lets tests steer it:
/// revoke a grant as the user would, inject failures, drop refresh tokens, add latency, and read every call it got.
///
/// It is written independently of Orchard's own Apple client and verifier, so that it cannot share their bugs.
public final class AppleEmulator: Sendable {
    /// The issuer of every identity token and notification.
    public static let issuer = "https://appleid.apple.com"

    /// How the emulator was set up.
    public let configuration: AppleEmulatorConfiguration
    /// Checks the client secrets sent to Apple's endpoints: one verifier per team, by team id.
    let clientSecretVerifiers: [String: ClientSecretVerifier]
    /// Grants, codes, tokens, keys and test controls.
    let state: Mutex<EmulatorState>
    /// Posts notifications.
    let httpClient: HTTPClient
    /// Logs calls and the server's life.
    let logger: Logger
    /// The subject of the user who consents on `/auth/authorize` when no `login_hint` names one (``setWebUser(_:)``).
    let webUserSub = Mutex<String?>(nil)

    /// Creates an emulator with a fresh RSA-2048 signing key.
    ///
    /// - Parameters:
    ///   - configuration: The client it accepts and the lifetimes it uses.
    ///   - httpClient: The client that posts notifications; the caller owns it.
    ///   - logger: Where the emulator logs the calls it gets (never a token's value).
    /// - Throws: ``AppleEmulatorError/Kind/invalidConfiguration`` for an unusable client key or an empty client id
    ///   list; ``AppleEmulatorError/Kind/signingFailed`` when no key can be generated.
    public init(
        configuration: AppleEmulatorConfiguration,
        httpClient: HTTPClient = .shared,
        logger: Logger = Logger(label: "orchard.apple-emulator")
    ) throws {
        guard configuration.teams.allSatisfy({ !$0.clientIDs.isEmpty }) else {
            throw AppleEmulatorError.invalidConfiguration("every team needs at least one client id")
        }
        guard Set(configuration.allClientIDs).count == configuration.allClientIDs.count,
            Set(configuration.teams.map(\.teamID)).count == configuration.teams.count
        else {
            throw AppleEmulatorError.invalidConfiguration("a team id or a client id is given twice")
        }
        self.configuration = configuration
        var verifiers: [String: ClientSecretVerifier] = [:]
        var owners: [String: String] = [:]
        for team in configuration.teams {
            verifiers[team.teamID] = ClientSecretVerifier(teamID: team.teamID, keyID: team.keyID, publicKey: try team.publicKey())
            for clientID in team.clientIDs { owners[clientID] = team.teamID }
        }
        self.clientSecretVerifiers = verifiers
        var initial = EmulatorState(signingKey: try .generate(), latency: configuration.latency, notifyURL: configuration.notifyURL)
        initial.teamOfClient = owners
        initial.transfers = EmulatorTransfers(teams: configuration.teams.map(\.teamID))
        self.state = Mutex(initial)
        self.httpClient = httpClient
        self.logger = logger
    }

    /// The current instant by the configured clock.
    var now: Date { configuration.clock.now() }

    /// Makes a user and remembers it under its subject.
    ///
    /// - Parameters:
    ///   - sub: The subject; a fresh one in Apple's format by default.
    ///   - email: The address the app sees; a fresh private relay address by default, under `relayDomain`.
    ///   - isPrivateEmail: Whether the address is a relay address; by default, whether it ends in either relay domain.
    ///   - relayDomain: The domain of a fresh relay address (the configured ``AppleEmulatorConfiguration/relayDomain``
    ///     by default).
    public func makeUser(
        sub: String? = nil,
        email: String? = nil,
        isPrivateEmail: Bool? = nil,
        emailVerified: Bool = true,
        realUserStatus: Int = 2,
        firstName: String? = nil,
        lastName: String? = nil,
        orgID: String? = nil,
        relayDomain: String? = nil
    ) -> EmulatedUser {
        let email = email ?? EmulatedUser.makePrivateRelayEmail(domain: relayDomain ?? configuration.relayDomain)
        let user = EmulatedUser(
            sub: sub ?? EmulatedUser.makeSubject(),
            email: email,
            isPrivateEmail: isPrivateEmail ?? EmulatedUser.isPrivateRelay(email),
            emailVerified: emailVerified,
            realUserStatus: realUserStatus,
            firstName: firstName,
            lastName: lastName,
            orgID: orgID ?? configuration.orgID
        )
        state.withLock { $0.remember(user) }
        return user
    }

    /// The user last seen with this subject (their own, or their subject at any team), if any.
    public func user(sub: String) -> EmulatedUser? {
        state.withLock { $0.user(sub: sub) }
    }

    /// The subject identity tokens for `clientID` carry for `user` now: the user's own ``EmulatedUser/sub`` at the
    /// first team, a team-scoped one at any other (it changes when the client id moves to another team).
    public func subject(of user: EmulatedUser, clientID: String) -> String {
        state.withLock { state in
            state.transfers.subject(of: user.sub, team: state.teamOfClient[clientID] ?? state.transfers.primaryTeam)
        }
    }

    /// The user as the team that owns `clientID` now sees them: its subject and its (team-scoped) relay address.
    public func view(of user: EmulatedUser, clientID: String) -> EmulatedUser {
        state.withLock { state in
            state.transfers.view(of: user, team: state.teamOfClient[clientID] ?? state.transfers.primaryTeam)
        }
    }

    /// Moves `clientID` to the team `toTeam`, as an app transfer in App Store Connect does: from then on its client
    /// secrets must be signed by that team's key, its identity tokens carry that team's subjects and, for 60 days, the
    /// `transfer_sub` claim of every user who had authorized the app; tokens issued before the move no longer work.
    ///
    /// - Throws: ``AppleEmulatorError/Kind/unknownClient`` for a client id or team the emulator does not know, or a
    ///   client id that already belongs to `toTeam`.
    public func transfer(clientID: String, toTeam: String) throws {
        let now = self.now
        try state.withLock { state in
            guard let from = state.teamOfClient[clientID] else {
                throw AppleEmulatorError(.unknownClient, reason: "\(clientID) is not a configured client id")
            }
            guard state.transfers.teams.contains(toTeam), toTeam != from else {
                throw AppleEmulatorError(.unknownClient, reason: "\(toTeam) is not another team the emulator knows")
            }
            let users = state.usersWithActiveGrants(clientID: clientID)
            state.transfers.move(clientID: clientID, from: from, to: toTeam, at: now, users: users)
            state.teamOfClient[clientID] = toTeam
        }
        logger.info("moved a client id to another team", metadata: ["apple_emulator.client_id": "\(clientID)", "apple_emulator.team": "\(toTeam)"])
    }

    /// Signs `user` in to `clientID` as a device would: an identity token and a one-time authorization code.
    ///
    /// - Parameters:
    ///   - nonce: The `nonce` claim, exactly as given (Orchard passes the raw nonce or its SHA-256 hex); none when nil.
    ///   - redirectURI: The web flow's redirect URI; when given, the code exchange must send the same one.
    /// - Throws: ``AppleEmulatorError/Kind/unknownClient`` for a client id not configured;
    ///   ``AppleEmulatorError/Kind/signingFailed``.
    public func authorize(
        user: EmulatedUser,
        clientID: String,
        nonce: String? = nil,
        redirectURI: String? = nil
    ) throws -> EmulatedAuthorization {
        guard configuration.allClientIDs.contains(clientID) else {
            throw AppleEmulatorError(.unknownClient, reason: "\(clientID) is not a configured client id")
        }
        let now = self.now
        let (code, isFirst) = state.withLock {
            $0.authorize(user: user, clientID: clientID, nonce: nonce, redirectURI: redirectURI, now: now)
        }
        let claims = identityTokenClaims(
            user: user,
            clientID: clientID,
            nonce: nonce,
            issuedAt: now,
            authTime: now,
            codeHashOf: code
        )
        logger.debug("authorized a user", metadata: ["apple_emulator.client_id": "\(clientID)"])
        return EmulatedAuthorization(
            identityToken: try signIdentityToken(claims: claims),
            authorizationCode: code,
            user: user,
            isFirstAuthorization: isFirst
        )
    }

    /// The team that owns `clientID` now, or `nil` for a client id no team has.
    public func team(of clientID: String) -> String? {
        state.withLock { $0.teamOfClient[clientID] }
    }

    /// Why `secret` does not authenticate `clientID` now (Apple's bare `invalid_client`; the reason is the emulator's
    /// note for the call log), or `nil` when it does: the client id must belong to a team, and the secret must be
    /// signed by that team's key with its team id.
    func clientSecretRejection(of secret: String, clientID: String) -> String? {
        guard let team = team(of: clientID), let verifier = clientSecretVerifiers[team] else { return "unknown client_id" }
        return verifier.rejection(of: secret, clientID: clientID, now: now)
    }

    /// The team whose secret authenticates `clientID` for app transfer's calls, or why none does: the team that owns
    /// the client id, or, for 60 days after the client id moved, the team it moved from (both sides work for 60 days).
    func migrationTeam(of secret: String, clientID: String) -> Result<String, EmulatorState.OAuthError> {
        let now = self.now
        let (owner, move) = state.withLock { ($0.teamOfClient[clientID], $0.transfers.moves[clientID]) }
        guard let owner, let verifier = clientSecretVerifiers[owner] else {
            return .failure(EmulatorState.OAuthError(code: "invalid_client", detail: "unknown client_id"))
        }
        guard let reason = verifier.rejection(of: secret, clientID: clientID, now: now) else { return .success(owner) }
        if let move, now.timeIntervalSince(move.at) < EmulatorTransfers.window, let previous = clientSecretVerifiers[move.fromTeam],
            previous.rejection(of: secret, clientID: clientID, now: now) == nil
        {
            return .success(move.fromTeam)
        }
        return .failure(EmulatorState.OAuthError(code: "invalid_client", detail: reason))
    }
}
