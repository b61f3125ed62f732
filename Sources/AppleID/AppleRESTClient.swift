public import Foundation
import Logging
import NIOHTTP1

/// Calls Apple's REST endpoints: `/auth/token` (code exchange, refresh-token validation, app transfer's team access
/// token), `/auth/revoke` and `/auth/usermigrationinfo` (app transfer).
///
/// Every call is a form-urlencoded `POST` authenticated by a client secret from ``ClientSecretSigner``, made through
/// ``AppleEndpoints`` (a deadline, no redirects, traced, logged and timed). Failures map as ``failure(status:body:)``
/// describes; transport failures are `apple_unavailable`.
public struct AppleRESTClient: Sendable {
    /// Where Apple is reached.
    public let endpoints: AppleEndpoints
    /// The deadline of each call, unless a call gives its own.
    public let timeout: Duration
    private let secrets: ClientSecretSigner
    private let clock: any WallClock
    /// App transfer's team access tokens, per client id (Apple refuses one used with another client id).
    private let teamTokens = TeamAccessTokenCache()

    /// Creates a client calling Apple at `endpoints`.
    /// - Parameters:
    ///   - secrets: The signer of client secrets.
    ///   - timeout: The deadline of each call.
    ///   - clock: What decides when a cached team access token has expired.
    public init(
        _ endpoints: AppleEndpoints,
        secrets: ClientSecretSigner,
        timeout: Duration = .seconds(10),
        clock: any WallClock = SystemWallClock()
    ) {
        self.endpoints = endpoints
        self.secrets = secrets
        self.timeout = timeout
        self.clock = clock
    }

    /// Exchanges an authorization code for Apple's tokens (`grant_type=authorization_code`).
    /// - Parameters:
    ///   - code: The authorization code (single use, valid five minutes).
    ///   - clientID: The client id the code was issued to.
    ///   - redirectURI: The redirect URI sent to `/auth/authorize` (web flow only); `nil` for native apps.
    /// - Throws: `authorization_code_rejected` for `invalid_grant`; `apple_client_rejected` for Apple's other refusals;
    ///   `apple_unavailable` when Apple cannot be reached or answers 5xx, 429 or an unreadable body.
    public func exchangeCode(_ code: Redacted<String>, clientID: String, redirectURI: String?) async throws(AppleIDError) -> AppleTokenResponse {
        var fields = [("grant_type", "authorization_code"), ("code", code.value)]
        if let redirectURI { fields.append(("redirect_uri", redirectURI)) }
        return try await post(.token, path: "auth/token", clientID: clientID, fields: fields, timeout: timeout) { body throws(AppleIDError) in
            try Self.decodeTokenResponse(body)
        }
    }

    /// Validates a refresh token (`grant_type=refresh_token`); Apple answers with a new access token and no refresh token.
    /// - Throws: as ``exchangeCode(_:clientID:redirectURI:)``; `authorization_code_rejected` means the user's
    ///   authorization is gone.
    public func validateRefreshToken(_ token: Redacted<String>, clientID: String) async throws(AppleIDError) -> AppleTokenResponse {
        let fields = [("grant_type", "refresh_token"), ("refresh_token", token.value)]
        return try await post(.token, path: "auth/token", clientID: clientID, fields: fields, timeout: timeout) { body throws(AppleIDError) in
            try Self.decodeTokenResponse(body)
        }
    }

    /// Revokes a refresh or access token, ending the user's authorization of the app.
    ///
    /// Apple answers 200 also for a token that was already invalid, so success proves only that Apple took the request.
    /// - Parameters:
    ///   - token: The token to revoke.
    ///   - hint: Which kind of token it is.
    ///   - clientID: The client id the token was issued to.
    ///   - deadline: How long to wait for Apple, instead of the client's timeout.
    /// - Throws: as ``exchangeCode(_:clientID:redirectURI:)``.
    public func revoke(_ token: Redacted<String>, hint: TokenTypeHint, clientID: String, deadline: Duration? = nil) async throws(AppleIDError) {
        let fields = [("token", token.value), ("token_type_hint", hint.rawValue)]
        try await post(.revoke, path: "auth/revoke", clientID: clientID, fields: fields, timeout: deadline ?? timeout) { _ throws(AppleIDError) in }
    }

    /// Asks Apple for the transfer identifier of a user of `clientID` moving to the team `target` (app transfer, sending
    /// side): `POST /auth/usermigrationinfo` with `sub` and `target`, a team access token and a fresh client secret.
    /// - Throws: `apple_client_rejected` with `invalid_request` when Apple refuses the user (they had stopped using
    ///   Sign in with Apple with the app, or the target is wrong), else as ``exchangeCode(_:clientID:redirectURI:)``.
    public func transferSub(for sub: Redacted<String>, target: String, clientID: String) async throws(AppleIDError) -> Redacted<String> {
        try await userMigrationInfo(clientID: clientID, fields: [("sub", sub.value), ("target", target)]) { body throws(AppleIDError) in
            do {
                return Redacted(try JSONDecoder().decode(AppleTransferSubAnswer.self, from: body).transferSub)
            } catch {
                throw .appleUnavailable("Apple's usermigrationinfo answer is not the JSON Apple documents")
            }
        }
    }

    /// Exchanges a transfer identifier for the user's subject at this team (app transfer, receiving side):
    /// `POST /auth/usermigrationinfo` with `transfer_sub`, a team access token and a fresh client secret.
    /// - Throws: as ``transferSub(for:target:clientID:)``.
    public func exchangeTransferSub(_ transferSub: Redacted<String>, clientID: String) async throws(AppleIDError) -> AppleTransferExchange {
        try await userMigrationInfo(clientID: clientID, fields: [("transfer_sub", transferSub.value)]) { body throws(AppleIDError) in
            do {
                return try JSONDecoder().decode(AppleTransferExchange.self, from: body)
            } catch {
                throw .appleUnavailable("Apple's usermigrationinfo answer is not the JSON Apple documents")
            }
        }
    }

    /// A team access token for `clientID` (`grant_type=client_credentials`, `scope=user.migration`): the cached one
    /// while more than a minute of it is left (at most an hour), else a new one, asked for with a fresh client secret.
    func teamAccessToken(clientID: String) async throws(AppleIDError) -> Redacted<String> {
        let now = clock.now()
        if let cached = await teamTokens.token(for: clientID, now: now) { return cached }
        let fields = [("grant_type", "client_credentials"), ("scope", "user.migration")]
        let answer = try await post(.token, path: "auth/token", clientID: clientID, fields: fields, timeout: timeout, freshSecret: true) {
            body throws(AppleIDError) in
            do {
                return try JSONDecoder().decode(AppleTeamAccessToken.self, from: body)
            } catch {
                throw .appleUnavailable("Apple's client_credentials answer is not the JSON Apple documents")
            }
        }
        let lifetime = min(max(answer.expiresIn ?? 3600, 0), 3600)
        let token = Redacted(answer.accessToken)
        await teamTokens.store(token, for: clientID, expiresAt: now.addingTimeInterval(TimeInterval(lifetime)))
        return token
    }

    /// One `/auth/usermigrationinfo` call; an `invalid_grant` (the team access token expired or was refused) drops the
    /// cached token and tries once more with a new one.
    private func userMigrationInfo<Value>(
        clientID: String,
        fields: [(String, String)],
        parse: (Data) throws(AppleIDError) -> Value
    ) async throws(AppleIDError) -> Value {
        var attempt = 0
        while true {
            attempt += 1
            let bearer = try await teamAccessToken(clientID: clientID)
            do throws(AppleIDError) {
                return try await post(
                    .userMigrationInfo,
                    path: "auth/usermigrationinfo",
                    clientID: clientID,
                    fields: fields,
                    timeout: timeout,
                    bearer: bearer,
                    freshSecret: true,
                    parse: parse
                )
            } catch  where error.appleErrorCode == .invalidGrant && attempt == 1 {
                await teamTokens.drop(clientID)
            }
        }
    }

    /// The error for an answer from Apple other than 2xx.
    ///
    /// 400 (or another 4xx) with `{"error": …}`: `invalid_grant` is `authorization_code_rejected`; `invalid_client`,
    /// `unauthorized_client`, `invalid_request`, `unsupported_grant_type`, `invalid_scope` and undocumented codes are
    /// `apple_client_rejected`; both carry ``AppleIDError/appleErrorCode``. 429, 5xx and bodies that are not Apple's
    /// error JSON are `apple_unavailable` (transient).
    public static func failure(status: Int, body: Data) -> AppleIDError {
        if status == 429 { return .appleUnavailable("Apple is throttling requests (HTTP 429)") }
        if status >= 500 { return .appleUnavailable("Apple answered HTTP \(status)") }
        guard (400..<500).contains(status), let response = try? JSONDecoder().decode(AppleErrorResponse.self, from: body) else {
            return .appleUnavailable("Apple answered HTTP \(status) without its error JSON")
        }
        let description = response.errorDescription.map { ": " + AppleTokenVerifier.printable($0) } ?? ""
        let reason = "Apple refused the request with \(response.error.rawValue) (HTTP \(status))\(description)"
        if response.error == .invalidGrant { return .authorizationCodeRejected(reason) }
        return .appleClientRejected(response.error, reason: reason)
    }

    private static func decodeTokenResponse(_ body: Data) throws(AppleIDError) -> AppleTokenResponse {
        do {
            return try JSONDecoder().decode(AppleTokenResponse.self, from: body)
        } catch {
            throw .appleUnavailable("Apple's token answer is not the JSON Apple documents")
        }
    }

    /// Posts a form with the client credentials added, and turns the answer into `Value` or an error.
    private func post<Value>(
        _ endpoint: AppleRequestMetrics.Endpoint,
        path: String,
        clientID: String,
        fields: [(String, String)],
        timeout: Duration,
        bearer: Redacted<String>? = nil,
        freshSecret: Bool = false,
        parse: (Data) throws(AppleIDError) -> Value
    ) async throws(AppleIDError) -> Value {
        try await endpoints.call(endpoint, .POST, path: path, clientID: clientID, timeout: timeout) { url throws(AppleIDError) in
            let secret = freshSecret ? try await secrets.freshSecret(for: clientID) : try await secrets.secret(for: clientID)
            let form = [("client_id", clientID), ("client_secret", secret.value)] + fields
            return AppleHTTPExchange.formPost(to: url, fields: form, bearer: bearer?.value)
        } answer: { exchange throws(AppleIDError) in
            guard (200..<300).contains(exchange.status) else { throw Self.failure(status: exchange.status, body: exchange.body) }
            return try parse(exchange.body)
        } log: { result, logger in
            guard case .failure(let error) = result else { return logger.debug("Apple accepted the request") }
            let metadata: Logger.Metadata = ["apple.error": "\(error.appleErrorCode?.rawValue ?? error.code.rawValue)"]
            switch error.code {
            case .appleClientRejected where endpoint == .userMigrationInfo && error.appleErrorCode == .invalidRequest:
                // The user's answer, not the client's: they had stopped using Sign in with Apple with the app.
                logger.info("Apple refused the user's transfer (invalid_request)", metadata: metadata)
            case .appleClientRejected:
                logger.error(
                    "Apple refused Orchard's client: check APPLE_TEAM_ID, APPLE_KEY_ID, the key and the client id (\(error.reason))",
                    metadata: metadata
                )
            case .appleUnavailable:
                logger.warning("Apple is unavailable: \(error.reason)", metadata: metadata)
            default:
                logger.info("Apple refused the grant: \(error.reason)", metadata: metadata)
            }
        }
    }
}

/// App transfer's team access tokens by client id, each until it expires.
actor TeamAccessTokenCache {
    private var tokens: [String: (token: Redacted<String>, expiresAt: Date)] = [:]

    /// The token for `clientID` if more than a minute of it is left at `now`.
    func token(for clientID: String, now: Date) -> Redacted<String>? {
        guard let cached = tokens[clientID], cached.expiresAt.timeIntervalSince(now) > 60 else { return nil }
        return cached.token
    }

    /// Keeps a token until `expiresAt`.
    func store(_ token: Redacted<String>, for clientID: String, expiresAt: Date) {
        tokens[clientID] = (token, expiresAt)
    }

    /// Forgets the token of `clientID`.
    func drop(_ clientID: String) {
        tokens[clientID] = nil
    }
}
