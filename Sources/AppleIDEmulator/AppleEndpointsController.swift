import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// Apple's endpoints: `GET /auth/keys`, `POST /auth/token`, `POST /auth/revoke`, app transfer's
/// `POST /auth/usermigrationinfo`, and the web flow's `GET /auth/authorize`.
///
/// Each call is logged as it arrives, waits out the latency, then meets any injected failure before the real work
/// (`/auth/authorize`, a page for a browser, is not delayed).
struct AppleEndpointsController<Context: RequestContext>: Sendable {
    /// The emulator whose state the endpoints read and change.
    let emulator: AppleEmulator

    /// Adds the endpoints to `router`.
    func addRoutes(to router: Router<Context>) {
        router.get(RouterPath(EmulatorEndpoint.keys.path)) { _, _ in
            await serve(.keys, form: AppleForm()) { _ in keys() }
        }
        router.post(RouterPath(EmulatorEndpoint.token.path)) { request, _ in
            let form = await AppleForm.read(from: request)
            return await serve(.token, form: form) { form in
                guard let form else { return .oauthError("invalid_request", detail: "the body is not a form") }
                return token(form)
            }
        }
        router.post(RouterPath(EmulatorEndpoint.revoke.path)) { request, _ in
            let form = await AppleForm.read(from: request)
            return await serve(.revoke, form: form) { form in
                guard let form else { return .oauthError("invalid_request", detail: "the body is not a form") }
                return revoke(form)
            }
        }
        router.post(RouterPath(EmulatorEndpoint.userMigrationInfo.path)) { request, _ in
            let bearer = Self.bearer(request)
            let form = await AppleForm.read(from: request)
            return await serve(.userMigrationInfo, form: form) { form in
                guard let form else { return .oauthError("invalid_request", detail: "the body is not a form") }
                return userMigrationInfo(form, bearer: bearer)
            }
        }
        router.get(RouterPath(EmulatorEndpoint.authorize.path)) { request, _ in
            await authorize(request)
        }
    }

    /// `/auth/authorize`: logs the visit, applies an injected failure (an Apple error is posted back to the redirect
    /// URI, as Apple does), else consents on the user's behalf.
    private func authorize(_ request: Request) async -> Response {
        var query: [String: String] = [:]
        for (key, value) in request.uri.queryParameters where query[String(key)] == nil {
            query[String(key)] = String(value)
        }
        var input = WebAuthorizationRequest(query: query)
        let call = EmulatorCall(
            sequence: 0,
            endpoint: .authorize,
            time: emulator.now,
            clientID: input.clientID,
            redirectURI: input.redirectURI
        )
        let sequence = emulator.state.withLock { $0.log(call) }
        switch emulator.state.withLock({ $0.takeFailure(for: .authorize) }) {
        case .status(let status):
            emulator.state.withLock { $0.complete(sequence, status: status, error: nil, detail: "injected failure") }
            return Response(status: .init(code: status), headers: [.contentLength: "0"])
        case .timeout:
            emulator.state.withLock { $0.complete(sequence, status: nil, error: nil, detail: "injected timeout: held") }
            guard await hold() else { return Response(status: .serviceUnavailable) }
            emulator.state.withLock { $0.complete(sequence, status: 504, error: nil, detail: "injected timeout: held, then gave up") }
            return Response(status: .gatewayTimeout, headers: [.contentLength: "0"])
        case .appleError(let code):
            input.error = code
        case nil:
            break
        }
        let answer = emulator.answerWebAuthorization(input)
        emulator.state.withLock {
            $0.complete(
                sequence,
                status: answer.status,
                error: answer.refusal ?? answer.field("error"),
                detail: answer.user == nil ? nil : "consented"
            )
        }
        let body = ByteBuffer(string: answer.html)
        return Response(
            status: .init(code: answer.status),
            headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store", .contentLength: "\(body.readableBytes)"],
            body: ResponseBody(byteBuffer: body)
        )
    }

    /// Logs the call, waits out the latency, applies an injected failure or else `answer`s the form (`nil` when the
    /// body could not be read as one).
    private func serve(_ endpoint: EmulatorEndpoint, form: AppleForm?, answer: (AppleForm?) -> AppleAnswer) async -> Response {
        let logged = form ?? AppleForm()
        let call = EmulatorCall(
            sequence: 0,
            endpoint: endpoint,
            time: emulator.now,
            grantType: logged.grantType,
            clientID: logged.clientID,
            tokenTypeHint: logged.tokenTypeHint,
            token: logged.token,
            code: logged.code,
            refreshToken: logged.refreshToken,
            redirectURI: logged.redirectURI
        )
        let (sequence, latency) = emulator.state.withLock { ($0.log(call), $0.latency) }
        if latency > .zero {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: latency) }
        }
        let result: AppleAnswer
        switch emulator.state.withLock({ $0.takeFailure(for: endpoint) }) {
        case .status(let status):
            result = .empty(status: status, detail: "injected failure")
        case .appleError(let code):
            result = .oauthError(code, detail: "injected failure")
        case .timeout:
            emulator.state.withLock { $0.complete(sequence, status: nil, error: nil, detail: "injected timeout: held") }
            guard await hold() else {
                return AppleAnswer.empty(status: 503).response
            }
            result = .empty(status: 504, detail: "injected timeout: held, then gave up")
        case nil:
            result = answer(form)
        }
        emulator.state.withLock { $0.complete(sequence, status: result.status, error: result.error, detail: result.detail) }
        emulator.logger.debug(
            "answered Apple endpoint",
            metadata: [
                "apple_emulator.endpoint": "\(endpoint.rawValue)",
                "apple_emulator.status": "\(result.status)",
                "apple_emulator.error": "\(result.error ?? "")",
            ]
        )
        var response = result.response
        if (300..<400).contains(result.status) {
            // An injected redirect points back at the same endpoint: a client that followed it would be answered there
            // (and the call log would show the second call).
            response.headers[.location] = endpoint.path
        }
        return response
    }

    /// Holds an injected timeout; true when the whole hold passed, false when the server shut down first.
    private func hold() async -> Bool {
        let duration = emulator.configuration.timeoutHold
        do {
            try await cancelWhenGracefulShutdown { try await Task.sleep(for: duration) }
            return true
        } catch {
            return false
        }
    }

    private func keys() -> AppleAnswer {
        do {
            return .json(try emulator.jsonWebKeySet())
        } catch {
            return .empty(status: 500, detail: "could not write the key set: \(error)")
        }
    }

    private func authenticateClient(_ form: AppleForm) -> AppleAnswer? {
        guard let clientID = AppleForm.present(form.clientID), let secret = AppleForm.present(form.clientSecret) else {
            return .oauthError("invalid_client", detail: "client_id or client_secret missing")
        }
        if let reason = emulator.clientSecretRejection(of: secret, clientID: clientID) {
            return .oauthError("invalid_client", detail: reason)
        }
        return nil
    }

    private func token(_ form: AppleForm) -> AppleAnswer {
        if form.grantType == "client_credentials" { return teamAccessToken(form) }
        if let refusal = authenticateClient(form) { return refusal }
        let clientID = form.clientID ?? ""
        let now = emulator.now
        let outcome: Result<EmulatorState.TokenGrant, EmulatorState.OAuthError>
        switch AppleForm.present(form.grantType) {
        case nil:
            return .oauthError("invalid_request", detail: "grant_type missing")
        case "authorization_code":
            guard let code = AppleForm.present(form.code) else {
                return .oauthError("invalid_request", detail: "code missing")
            }
            let lifetime = TimeInterval(emulator.configuration.codeLifetime.components.seconds)
            outcome = emulator.state.withLock {
                $0.exchange(code: code, clientID: clientID, redirectURI: form.redirectURI, now: now, codeLifetime: lifetime)
            }
        case "refresh_token":
            guard let refreshToken = AppleForm.present(form.refreshToken) else {
                return .oauthError("invalid_request", detail: "refresh_token missing")
            }
            outcome = emulator.state.withLock { $0.refresh(token: refreshToken, clientID: clientID) }
        case let other?:
            return .oauthError("unsupported_grant_type", detail: "grant_type \(other) is not emulated")
        }
        switch outcome {
        case .failure(let error):
            return .oauthError(error)
        case .success(let grant):
            return tokenResponse(grant, now: now)
        }
    }

    private func tokenResponse(_ grant: EmulatorState.TokenGrant, now: Date) -> AppleAnswer {
        let claims = emulator.identityTokenClaims(
            user: grant.user,
            clientID: grant.clientID,
            nonce: grant.nonce,
            issuedAt: now,
            authTime: grant.authTime,
            accessTokenHashOf: grant.accessToken
        )
        do {
            var pairs: [(key: String, value: any Sendable)] = [
                (key: "access_token", value: grant.accessToken),
                (key: "token_type", value: "bearer"),
                (key: "expires_in", value: 3600),
            ]
            if let refreshToken = grant.refreshToken {
                pairs.append((key: "refresh_token", value: refreshToken))
            }
            pairs.append((key: "id_token", value: try emulator.signIdentityToken(claims: claims)))
            return .json(try JSONText.object(pairs))
        } catch {
            return .empty(status: 500, detail: "could not sign the id_token: \(error)")
        }
    }

    /// The team app transfer's call is made by: the one whose secret authenticates the client id (its owner, or for 60
    /// days after a move the team it moved from), or Apple's `invalid_client`.
    private func migrationTeam(_ form: AppleForm) -> Result<String, EmulatorState.OAuthError> {
        guard let clientID = AppleForm.present(form.clientID), let secret = AppleForm.present(form.clientSecret) else {
            return .failure(EmulatorState.OAuthError(code: "invalid_client", detail: "client_id or client_secret missing"))
        }
        return emulator.migrationTeam(of: secret, clientID: clientID)
    }

    /// `grant_type=client_credentials`, `scope=user.migration`: a team access token for the calling team, an hour.
    private func teamAccessToken(_ form: AppleForm) -> AppleAnswer {
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
    private func userMigrationInfo(_ form: AppleForm, bearer: String?) -> AppleAnswer {
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
    private static func bearer(_ request: Request) -> String? {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else { return nil }
        return String(header.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)
    }

    private func revoke(_ form: AppleForm) -> AppleAnswer {
        if let refusal = authenticateClient(form) { return refusal }
        guard let token = AppleForm.present(form.token) else {
            return .oauthError("invalid_request", detail: "token missing")
        }
        let clientID = form.clientID ?? ""
        let now = emulator.now
        let wasValid = emulator.state.withLock {
            $0.revoke(token: token, tokenTypeHint: form.tokenTypeHint, clientID: clientID, now: now)
        }
        return .empty(status: 200, detail: wasValid ? "grant ended" : "token was already invalid or unknown")
    }
}
