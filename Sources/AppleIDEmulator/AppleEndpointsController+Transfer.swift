import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// App transfer's endpoints: the team access token (`client_credentials`) and `/auth/usermigrationinfo`.
extension AppleEndpointsController {
    /// The team app transfer's call is made by: the one whose secret authenticates the client id (its owner, or for 60
    /// days after a move the team it moved from), or Apple's `invalid_client`.
    func migrationTeam(_ form: AppleForm) -> Result<String, EmulatorState.OAuthError> {
        guard let clientID = AppleForm.present(form.clientID), let secret = AppleForm.present(form.clientSecret) else {
            return .failure(EmulatorState.OAuthError(code: "invalid_client", detail: "client_id or client_secret missing"))
        }
        return emulator.migrationTeam(of: secret, clientID: clientID)
    }

    /// `grant_type=client_credentials`, `scope=user.migration`: a team access token for the calling team, an hour.
    func teamAccessToken(_ form: AppleForm) -> AppleAnswer {
        let team: String
        switch migrationTeam(form) {
        case .failure(let error): return .oauthError(error)
        case .success(let authenticated): team = authenticated
        }
        guard form.scope == "user.migration" else {
            return .oauthError("invalid_scope", detail: "client_credentials needs scope=user.migration")
        }
        let clientID = form.clientID ?? ""
        let now = emulator.now
        let token = emulator.state.withLock { state in
            state.transfers.issueTeamToken(clientID: clientID, teamID: team, now: now)
        }
        let pairs: [(key: String, value: any Sendable)] = [
            (key: "access_token", value: token),
            (key: "token_type", value: "Bearer"),
            (key: "expires_in", value: EmulatorTransfers.teamTokenLifetime),
        ]
        return (try? JSONText.object(pairs)).map { AppleAnswer.json($0) } ?? .empty(status: 500, detail: "could not write the answer")
    }

    /// `/auth/usermigrationinfo`: with `sub` and `target`, the sending team asks for a user's transfer identifier; with
    /// `transfer_sub`, the receiving team exchanges one for its own subject (and the private relay address).
    func userMigrationInfo(_ form: AppleForm, bearer: String?) -> AppleAnswer {
        let team: String
        switch migrationTeam(form) {
        case .failure(let error): return .oauthError(error)
        case .success(let authenticated): team = authenticated
        }
        let clientID = form.clientID ?? ""
        let now = emulator.now
        return emulator.state.withLock { state -> AppleAnswer in
            if let reason = state.transfers.teamTokenRejection(bearer, clientID: clientID, teamID: team, now: now) {
                return .oauthError("invalid_grant", detail: reason)
            }
            if let transferSub = AppleForm.present(form.transferSub) {
                guard let id = state.transfers.transferID(transferSub), id.clientID == clientID, id.toTeam == team,
                    state.teamOfClient[clientID] == team
                else {
                    return .oauthError("invalid_request", detail: "unknown transfer_sub, or not one for this client and team")
                }
                if let move = state.transfers.moves[clientID], now.timeIntervalSince(move.at) >= EmulatorTransfers.window {
                    return .oauthError("invalid_request", detail: "the 60 days after the transfer are over")
                }
                guard state.hasActiveGrant(sub: id.sub, clientID: clientID), let user = state.user(sub: id.sub) else {
                    return .oauthError("invalid_request", detail: "the user stopped using Sign in with Apple with the app")
                }
                let view = state.transfers.view(of: user, team: team)
                var pairs: [(key: String, value: any Sendable)] = [(key: "sub", value: view.sub)]
                if view.isPrivateEmail, let email = view.email {
                    pairs.append((key: "email", value: email))
                    pairs.append((key: "is_private_email", value: true))
                }
                return (try? JSONText.object(pairs)).map { AppleAnswer.json($0) } ?? .empty(status: 500)
            }
            guard let sub = AppleForm.present(form.sub), let target = AppleForm.present(form.target) else {
                return .oauthError("invalid_request", detail: "give sub and target, or transfer_sub")
            }
            guard state.transfers.teams.contains(target), target != team else {
                return .oauthError("invalid_request", detail: "target is not another team")
            }
            let own = state.transfers.ownSubject(of: sub)
            guard state.transfers.subject(of: own, team: team) == sub, state.hasActiveGrant(sub: own, clientID: clientID) else {
                return .oauthError("invalid_request", detail: "no user with this sub has authorized the app")
            }
            let id = state.transfers.transferID(sub: own, clientID: clientID, from: team, to: target)
            return (try? JSONText.object([(key: "transfer_sub", value: id)])).map { AppleAnswer.json($0) } ?? .empty(status: 500)
        }
    }

    /// The token of an `Authorization: Bearer` header.
    static func bearer(_ request: Request) -> String? {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else { return nil }
        return String(header.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)
    }
}
