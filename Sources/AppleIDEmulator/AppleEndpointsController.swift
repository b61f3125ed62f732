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
        let sequence = emulator.state.withLock { $0.callLog.append(call) }
        switch emulator.state.withLock({ $0.failures.take(for: .authorize) }) {
        case .status(let status):
            emulator.state.withLock { $0.callLog.complete(sequence, status: status, error: nil, detail: "injected failure") }
            return Response(status: .init(code: status), headers: [.contentLength: "0"])
        case .timeout:
            emulator.state.withLock { $0.callLog.complete(sequence, status: nil, error: nil, detail: "injected timeout: held") }
            guard await hold() else { return Response(status: .serviceUnavailable) }
            emulator.state.withLock { $0.callLog.complete(sequence, status: 504, error: nil, detail: "injected timeout: held, then gave up") }
            return Response(status: .gatewayTimeout, headers: [.contentLength: "0"])
        case .appleError(let code):
            input.error = code
        case nil:
            break
        }
        let answer = emulator.answerWebAuthorization(input)
        emulator.state.withLock {
            $0.callLog.complete(
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
        let onOwnThreads = EmulatorExecutor.shared.isCurrent
        let (sequence, latency) = emulator.state.withLock { state in
            if onOwnThreads { state.callsOnOwnThreads += 1 }
            return (state.callLog.append(call), state.latency)
        }
        if latency > .zero {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: latency) }
        }
        // Held until the test releases it (the predicate is called outside the lock: it may read the emulator); a call
        // still held when the emulator shuts down is answered 503, as an injected timeout is, and does nothing.
        while let held = emulator.state.withLock({ $0.heldCalls }), held(call) {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(10)) }
            } catch {
                emulator.state.withLock { $0.callLog.complete(sequence, status: 503, error: nil, detail: "held at shutdown") }
                return AppleAnswer.empty(status: 503).response
            }
        }
        let result: AppleAnswer
        switch emulator.state.withLock({ $0.failures.take(for: endpoint) }) {
        case .status(let status):
            result = .empty(status: status, detail: "injected failure")
        case .appleError(let code):
            result = .oauthError(code, detail: "injected failure")
        case .timeout:
            emulator.state.withLock { $0.callLog.complete(sequence, status: nil, error: nil, detail: "injected timeout: held") }
            guard await hold() else {
                return AppleAnswer.empty(status: 503).response
            }
            result = .empty(status: 504, detail: "injected timeout: held, then gave up")
        case nil:
            result = answer(form)
        }
        emulator.state.withLock { $0.callLog.complete(sequence, status: result.status, error: result.error, detail: result.detail) }
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
