import Foundation

/// Everything the emulator remembers, kept behind the emulator's `Mutex`: Apple's grants with their codes and
/// tokens, the keys, and the test controls.
///
/// A grant is one user's authorization of one client. Codes and tokens hang off it; revoking any of its tokens, or the
/// user revoking the app in Apple ID settings, ends the grant and with it every code and token it issued. The next
/// authorization then starts a new grant (and is again a "first" authorization).
struct EmulatorState: Sendable {
    private struct GrantKey: Hashable, Sendable {
        var sub: String
        var clientID: String
    }

    private struct Grant: Sendable {
        var key: GrantKey
        var user: EmulatedUser
        var authTime: Date
        var isActive = true
    }

    private struct IssuedCode: Sendable {
        var grantID: Int
        var clientID: String
        var redirectURI: String?
        var nonce: String?
        var issuedAt: Date
        var isUsed = false
    }

    private enum TokenKind: Sendable {
        case refresh
        case access
    }

    private struct IssuedToken: Sendable {
        var grantID: Int
        var kind: TokenKind
        var clientID: String
        /// The team that owned the client id when the token was issued: after an app transfer, the new team cannot
        /// use or revoke the old team's tokens.
        var teamID: String?
    }

    /// Signing keys, oldest first; the last one signs.
    var signingKeys: [EmulatorSigningKey]
    /// Delay before Apple's endpoints answer.
    var latency: Duration
    /// Which calls are held at Apple until a test releases them (``AppleEmulator/holdCalls(where:)``).
    var heldCalls: (@Sendable (EmulatorCall) -> Bool)?
    /// How many calls to Apple's endpoints were taken up on the emulators' own threads (``EmulatorExecutor``).
    var callsOnOwnThreads = 0
    /// Where notifications go.
    var notifyURL: String?
    /// Users by subject, as last authorized.
    private(set) var users: [String: EmulatedUser] = [:]
    /// Which team owns each client id (``AppleEmulator/team(of:)``).
    var teamOfClient: [String: String] = [:]
    /// Team-scoped subjects, team access tokens, transfer identifiers and moved client ids.
    var transfers = EmulatorTransfers(teams: [])
    private var grants: [Int: Grant] = [:]
    private var activeGrants: [GrantKey: Int] = [:]
    private var nextGrantID = 1
    private var codes: [String: IssuedCode] = [:]
    private var tokens: [String: IssuedToken] = [:]
    private var tokenOrder: [String] = []
    /// Failures queued for Apple's endpoints.
    var failures = EmulatorFailureQueue()
    private var refreshTokensToOmit = 0
    /// Every call to Apple's endpoints, in order, with its answer.
    var callLog = EmulatorCallLog()
    /// Every identity token and notification signed, in order.
    var signedJWS: [String] = []
    private(set) var revocations: [EmulatorRevocation] = []

    /// A state with one signing key and no grants.
    init(signingKey: EmulatorSigningKey, latency: Duration, notifyURL: String?) {
        self.signingKeys = [signingKey]
        self.latency = latency
        self.notifyURL = notifyURL
    }

    // MARK: Users and authorization

    /// Everything handed out that identifies a user or grants access (see ``AppleEmulator/issuedSecrets()``).
    func secrets() -> [String] {
        let people = users.values.flatMap { user in
            [user.sub, user.email, user.firstName, user.lastName].compactMap(\.self)
                + transfers.teams.compactMap { transfers.view(of: user, team: $0).email }
        }
        return people + codes.keys + tokenOrder + signedJWS + transfers.secrets
    }

    /// Remembers `user` under its subject (the latest version wins).
    mutating func remember(_ user: EmulatedUser) {
        users[user.sub] = user
        transfers.register(user)
    }

    /// The user with this subject at any team.
    func user(sub: String) -> EmulatedUser? {
        users[transfers.ownSubject(of: sub)]
    }

    /// Whether the user (by their own subject) has an active grant at `clientID`.
    func hasActiveGrant(sub: String, clientID: String) -> Bool {
        activeGrants[GrantKey(sub: sub, clientID: clientID)] != nil
    }

    /// The users (own subjects) with an active grant at `clientID`.
    func usersWithActiveGrants(clientID: String) -> Set<String> {
        Set(activeGrants.keys.filter { $0.clientID == clientID }.map(\.sub))
    }

    /// Issues a code for `user` at `clientID`, starting a grant when none is active; says whether it started one.
    mutating func authorize(
        user: EmulatedUser,
        clientID: String,
        nonce: String?,
        redirectURI: String?,
        now: Date
    ) -> (code: String, isFirstAuthorization: Bool) {
        remember(user)
        let key = GrantKey(sub: user.sub, clientID: clientID)
        let grantID: Int
        let isFirst: Bool
        if let active = activeGrants[key] {
            grantID = active
            grants[active]?.user = user
            grants[active]?.authTime = now
            isFirst = false
        } else {
            grantID = nextGrantID
            nextGrantID += 1
            grants[grantID] = Grant(key: key, user: user, authTime: now)
            activeGrants[key] = grantID
            isFirst = true
        }
        let code = RandomToken.appleOpaque(prefix: "c")
        codes[code] = IssuedCode(grantID: grantID, clientID: clientID, redirectURI: redirectURI, nonce: nonce, issuedAt: now)
        return (code, isFirst)
    }

    // MARK: Grants

    /// Exchanges an authorization code (`grant_type=authorization_code`) for tokens.
    mutating func exchange(
        code: String,
        clientID: String,
        redirectURI: String?,
        now: Date,
        codeLifetime: TimeInterval
    ) -> Result<TokenGrant, OAuthError> {
        let expired = OAuthError(code: "invalid_grant", description: "The code has expired or has been revoked.")
        guard let issued = codes[code] else {
            return .failure(with(expired, detail: "unknown code"))
        }
        guard !issued.isUsed else {
            return .failure(OAuthError(code: "invalid_grant", description: "The code has already been used.", detail: "code reused"))
        }
        guard now.timeIntervalSince(issued.issuedAt) <= codeLifetime else {
            return .failure(with(expired, detail: "code expired"))
        }
        guard issued.clientID == clientID else {
            return .failure(
                OAuthError(
                    code: "invalid_grant",
                    description: "client_id mismatch. The code was not issued to \(clientID)",
                    detail: "code issued to another client"
                )
            )
        }
        guard issued.redirectURI == redirectURI else {
            let detail =
                issued.redirectURI == nil
                ? "redirect_uri sent, but the authorization had none"
                : "redirect_uri differs from the authorization's"
            return .failure(OAuthError(code: "invalid_grant", description: nil, detail: detail))
        }
        guard let grant = grants[issued.grantID], grant.isActive else {
            return .failure(with(expired, detail: "the user's grant was revoked"))
        }
        codes[code]?.isUsed = true
        let accessToken = issue(.access, grantID: issued.grantID, clientID: clientID)
        var refreshToken: String?
        if refreshTokensToOmit > 0 {
            refreshTokensToOmit -= 1
        } else {
            refreshToken = issue(.refresh, grantID: issued.grantID, clientID: clientID)
        }
        return .success(
            TokenGrant(
                accessToken: accessToken,
                refreshToken: refreshToken,
                user: grant.user,
                clientID: clientID,
                nonce: issued.nonce,
                authTime: grant.authTime
            )
        )
    }

    /// Validates a refresh token (`grant_type=refresh_token`) and issues a new access token (no new refresh token).
    mutating func refresh(token: String, clientID: String) -> Result<TokenGrant, OAuthError> {
        guard let issued = tokens[token], issued.kind == .refresh else {
            return .failure(OAuthError(code: "invalid_grant", description: nil, detail: "unknown refresh token"))
        }
        guard issued.clientID == clientID else {
            return .failure(OAuthError(code: "invalid_grant", description: nil, detail: "refresh token issued to another client"))
        }
        guard issued.teamID == teamOfClient[clientID] else {
            return .failure(OAuthError(code: "invalid_grant", description: nil, detail: "refresh token issued to the app's previous team"))
        }
        guard let grant = grants[issued.grantID], grant.isActive else {
            return .failure(OAuthError(code: "invalid_grant", description: nil, detail: "the user's grant was revoked"))
        }
        let accessToken = issue(.access, grantID: issued.grantID, clientID: clientID)
        return .success(
            TokenGrant(
                accessToken: accessToken,
                refreshToken: nil,
                user: grant.user,
                clientID: clientID,
                nonce: nil,
                authTime: grant.authTime
            )
        )
    }

    /// Handles `/auth/revoke` for an authenticated client: ends the token's grant when the token still works, and
    /// records the request either way. Returns whether the token was valid.
    mutating func revoke(token: String, tokenTypeHint: String?, clientID: String, now: Date) -> Bool {
        var wasValid = false
        if let issued = tokens[token], issued.clientID == clientID, issued.teamID == teamOfClient[clientID],
            grants[issued.grantID]?.isActive == true
        {
            endGrant(issued.grantID)
            wasValid = true
        }
        revocations.append(
            EmulatorRevocation(token: token, tokenTypeHint: tokenTypeHint, clientID: clientID, wasValid: wasValid, time: now)
        )
        return wasValid
    }

    /// Ends the active grants of `sub` (at `clientID`, or at every client), as when the user stops using Sign in with
    /// Apple for the app in Apple ID settings. Returns how many grants ended.
    mutating func revokeGrants(sub: String, clientID: String?) -> Int {
        let sub = transfers.ownSubject(of: sub)
        let ended = activeGrants.filter { key, _ in key.sub == sub && (clientID == nil || key.clientID == clientID) }
        for grantID in ended.values {
            endGrant(grantID)
        }
        return ended.count
    }

    /// Whether `token` is a refresh or access token the emulator issued whose grant has ended.
    func isRevoked(token: String) -> Bool {
        guard let issued = tokens[token] else { return false }
        return grants[issued.grantID]?.isActive == false
    }

    /// The refresh and access tokens issued to `sub` (at `clientID`, or at every client), valid or not, in issue order.
    func issuedTokens(sub: String, clientID: String?) -> [String] {
        let sub = transfers.ownSubject(of: sub)
        return tokenOrder.filter { token in
            guard let issued = tokens[token], let grant = grants[issued.grantID] else { return false }
            return grant.key.sub == sub && (clientID == nil || issued.clientID == clientID)
        }
    }

    /// Answers the next N code exchanges without a refresh token.
    mutating func omitRefreshTokens(nextExchanges: Int) {
        refreshTokensToOmit = max(0, nextExchanges)
    }

    private mutating func endGrant(_ grantID: Int) {
        guard let grant = grants[grantID], grant.isActive else { return }
        grants[grantID]?.isActive = false
        if activeGrants[grant.key] == grantID {
            activeGrants[grant.key] = nil
        }
    }

    private mutating func issue(_ kind: TokenKind, grantID: Int, clientID: String) -> String {
        let token = RandomToken.appleOpaque(prefix: kind == .refresh ? "r" : "a")
        tokens[token] = IssuedToken(grantID: grantID, kind: kind, clientID: clientID, teamID: teamOfClient[clientID])
        tokenOrder.append(token)
        return token
    }

    private func with(_ error: OAuthError, detail: String) -> OAuthError {
        var error = error
        error.detail = detail
        return error
    }
}
