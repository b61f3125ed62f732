import Crypto
import Foundation

/// Apple's side of an app transfer (TN3159), kept in the emulator's state: team-scoped subjects, team access tokens
/// (`grant_type=client_credentials`, `scope=user.migration`), transfer identifiers, and the client ids that moved.
///
/// A user's subject is scoped to a team: at the first team it is the user's own ``EmulatedUser/sub``, at any other a
/// value derived from it (in Apple's format), so the same person has a different `sub` at each team, as at Apple. A
/// private relay address is scoped the same way. Transfer identifiers are derived from the user, the client id and the
/// two teams, so the one the sending team is given is the one the receiving team's identity tokens carry.
struct EmulatorTransfers: Sendable {
    /// A team access token.
    struct TeamToken: Sendable {
        var clientID: String
        var teamID: String
        var expiresAt: Date
    }

    /// What a transfer identifier stands for.
    struct TransferID: Sendable {
        /// The user's own `sub` (the first team's subject).
        var sub: String
        var clientID: String
        var fromTeam: String
        var toTeam: String
    }

    /// A client id that moved to another team.
    struct Move: Sendable {
        var fromTeam: String
        var toTeam: String
        var at: Date
        /// The users (their own `sub`) who had authorized the app when it moved: their identity tokens carry
        /// `transfer_sub` for 60 days.
        var users: Set<String>
    }

    /// How long identity tokens carry `transfer_sub` after a move: 60 days.
    static let window: TimeInterval = 60 * 86_400
    /// How long a team access token lives: an hour.
    static let teamTokenLifetime = 3600

    /// The first team: a user's subject there is the user's own `sub`.
    let primaryTeam: String
    /// Every team.
    let teams: [String]
    /// The latest move of each client id.
    private(set) var moves: [String: Move] = [:]
    private var teamTokens: [String: TeamToken] = [:]
    private var transferIDs: [String: TransferID] = [:]
    /// Subjects at the other teams, to the user's own `sub`.
    private var ownSubjects: [String: String] = [:]

    /// Transfers for these teams, the first one first.
    init(teams: [String]) {
        self.teams = teams
        self.primaryTeam = teams.first ?? ""
    }

    // MARK: Team-scoped identities

    /// The subject `team` sees for the user whose own subject is `sub`.
    func subject(of sub: String, team: String) -> String {
        team == primaryTeam ? sub : Self.appleShaped(Self.digest("subject|\(team)|\(sub)"))
    }

    /// The user as `team` sees them: its subject, and its private relay address (a relay address is per team).
    func view(of user: EmulatedUser, team: String) -> EmulatedUser {
        guard team != primaryTeam else { return user }
        var view = user
        view.sub = subject(of: user.sub, team: team)
        if user.isPrivateEmail, user.email != nil {
            view.email = "\(Self.digest("relay|\(team)|\(user.sub)").prefix(10))@\(EmulatedUser.privateRelayDomain)"
        }
        return view
    }

    /// Learns the subjects `user` has at every team, so that ``ownSubject(of:)`` finds it by any of them.
    mutating func register(_ user: EmulatedUser) {
        for team in teams where team != primaryTeam {
            ownSubjects[subject(of: user.sub, team: team)] = user.sub
        }
    }

    /// The user's own subject for a subject at any team (itself when it is not another team's).
    func ownSubject(of sub: String) -> String {
        ownSubjects[sub] ?? sub
    }

    /// Every subject and transfer identifier handed out, for ``EmulatorState/secrets()``.
    var secrets: [String] { Array(ownSubjects.keys) + transferIDs.keys + teamTokens.keys }

    // MARK: Team access tokens

    /// Issues a team access token for `clientID` of `teamID`, valid for an hour from `now`.
    mutating func issueTeamToken(clientID: String, teamID: String, now: Date) -> String {
        let token = RandomToken.appleOpaque(prefix: "t")
        teamTokens[token] = TeamToken(clientID: clientID, teamID: teamID, expiresAt: now.addingTimeInterval(TimeInterval(Self.teamTokenLifetime)))
        return token
    }

    /// Why `token` does not authorize a migration call of `clientID` (owned by `teamID` now), or `nil` when it does.
    func teamTokenRejection(_ token: String?, clientID: String, teamID: String, now: Date) -> String? {
        guard let token else { return "no Authorization: Bearer header" }
        guard let issued = teamTokens[token] else { return "unknown bearer token" }
        guard issued.expiresAt > now else { return "the bearer token has expired" }
        guard issued.clientID == clientID, issued.teamID == teamID else { return "the bearer token was issued to another client" }
        return nil
    }

    // MARK: Transfer identifiers

    /// The transfer identifier of the user `sub` (their own subject) for `clientID` moving from one team to another.
    mutating func transferID(sub: String, clientID: String, from: String, to: String) -> String {
        let id = Self.appleShaped(Self.digest("transfer|\(clientID)|\(from)|\(to)|\(sub)"))
        transferIDs[id] = TransferID(sub: sub, clientID: clientID, fromTeam: from, toTeam: to)
        return id
    }

    /// What a transfer identifier stands for, if it was handed out.
    func transferID(_ id: String) -> TransferID? {
        transferIDs[id]
    }

    /// Moves `clientID` to another team at `at`; `users` are the users (own subjects) who had authorized it.
    mutating func move(clientID: String, from: String, to: String, at: Date, users: Set<String>) {
        moves[clientID] = Move(fromTeam: from, toTeam: to, at: at, users: users)
        for sub in users {
            _ = transferID(sub: sub, clientID: clientID, from: from, to: to)
        }
    }

    /// The `transfer_sub` claim of an identity token for the user `sub` at `clientID` issued at `now`: the transfer
    /// identifier for 60 days after the app moved, for the users who had authorized it then.
    func transferSubClaim(sub: String, clientID: String, now: Date) -> String? {
        guard let move = moves[clientID], move.users.contains(sub), now.timeIntervalSince(move.at) < Self.window else { return nil }
        return Self.appleShaped(Self.digest("transfer|\(clientID)|\(move.fromTeam)|\(move.toTeam)|\(sub)"))
    }

    // MARK: Derivation

    private static func digest(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }
        .joined()
    }

    /// `NNNNNN.<32 hex>.NNNN` from a hex digest: the shape of Apple's subjects and transfer identifiers.
    private static func appleShaped(_ hex: String) -> String {
        let head = Int(hex.prefix(5), radix: 16)! % 1_000_000
        let tail = Int(hex.suffix(4), radix: 16)! % 10_000
        let middle = hex.dropFirst(5).prefix(32)
        return "\(String(format: "%06d", head)).\(middle).\(String(format: "%04d", tail))"
    }
}
