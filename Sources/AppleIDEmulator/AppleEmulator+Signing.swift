import Crypto
public import Foundation
import Synchronization

extension AppleEmulator {
    /// The claims Apple puts in an identity token for `user` at `clientID`, issued now: a starting point for tests that
    /// change one claim and sign the result with ``signIdentityToken(claims:headerOverrides:)``.
    ///
    /// - Parameters:
    ///   - nonce: The `nonce` claim, exactly as given; left out when nil.
    ///   - authorizationCode: When given, `c_hash` is computed over it.
    public func identityTokenClaims(
        user: EmulatedUser,
        clientID: String,
        nonce: String? = nil,
        authorizationCode: String? = nil
    ) -> [String: any Sendable] {
        let now = self.now
        return identityTokenClaims(
            user: user,
            clientID: clientID,
            nonce: nonce,
            issuedAt: now,
            authTime: now,
            codeHashOf: authorizationCode
        )
    }

    /// The claims of an identity token issued at `issuedAt`, with `c_hash` over `code` and `at_hash` over
    /// `accessToken` when they are given.
    func identityTokenClaims(
        user: EmulatedUser,
        clientID: String,
        nonce: String?,
        issuedAt: Date,
        authTime: Date,
        codeHashOf code: String? = nil,
        accessTokenHashOf accessToken: String? = nil
    ) -> [String: any Sendable] {
        let (user, transferSub) = state.withLock { state in
            let team = state.teamOfClient[clientID] ?? state.transfers.primaryTeam
            return (
                state.transfers.view(of: user, team: team),
                state.transfers.transferSubClaim(sub: user.sub, clientID: clientID, now: issuedAt)
            )
        }
        let iat = Int(issuedAt.timeIntervalSince1970)
        var claims: [String: any Sendable] = [
            "iss": Self.issuer,
            "aud": clientID,
            "exp": iat + Int(configuration.identityTokenLifetime.components.seconds),
            "iat": iat,
            "sub": user.sub,
            "auth_time": Int(authTime.timeIntervalSince1970),
            "nonce_supported": true,
            "real_user_status": user.realUserStatus,
        ]
        if let email = user.email {
            claims["email"] = email
            claims["email_verified"] = user.emailVerified
            claims["is_private_email"] = user.isPrivateEmail
        }
        if let orgID = user.orgID {
            claims["org_id"] = orgID
        }
        if let nonce {
            claims["nonce"] = nonce
        }
        if let transferSub {
            claims["transfer_sub"] = transferSub
        }
        if let code {
            claims["c_hash"] = Self.halfHash(code)
        }
        if let accessToken {
            claims["at_hash"] = Self.halfHash(accessToken)
        }
        return claims
    }

    /// Signs any claims as an identity token with the current key: RS256, header `{"kid","alg":"RS256"}`.
    ///
    /// - Parameters:
    ///   - claims: The payload, written with Apple's claim order; strings, numbers, booleans, arrays and objects.
    ///   - headerOverrides: Header fields to set (e.g. `["kid": "unknown"]`, `["alg": "HS256"]`) or, with a `nil`
    ///     value, to leave out. The signature is RS256 by the current key whatever the header says.
    /// - Throws: ``AppleEmulatorError/Kind/invalidClaims`` for a value JSON cannot hold;
    ///   ``AppleEmulatorError/Kind/signingFailed``.
    public func signIdentityToken(
        claims: [String: any Sendable],
        headerOverrides: [String: (any Sendable)?] = [:]
    ) throws -> String {
        try sign(payload: JSONText.object(claims), headerOverrides: headerOverrides)
    }

    /// Signs an `Encodable` payload as an identity token with the current key (see
    /// ``signIdentityToken(claims:headerOverrides:)``).
    public func signIdentityToken(
        _ claims: some Encodable,
        headerOverrides: [String: (any Sendable)?] = [:]
    ) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let payload: Data
        do {
            payload = try encoder.encode(claims)
        } catch {
            throw AppleEmulatorError(.invalidClaims, reason: "the claims do not encode as JSON", underlying: error)
        }
        return try sign(payload: payload, headerOverrides: headerOverrides)
    }

    /// Signs a server-to-server notification as Apple does.
    ///
    /// Claims `iss`, `aud` (the client id), `iat` (now), `exp` (24 hours later), `jti` and `events`: a JSON object
    /// encoded as a string, `{"type","sub","event_time" (ms),"email"?,"is_private_email"? ("true"/"false")}`.
    ///
    /// - Parameters:
    ///   - type: `email-disabled`, `email-enabled`, `consent-revoked`, `account-delete` (or any other string).
    ///   - jti: The token id; 22 random base64url characters by default.
    ///   - eventTime: When the event happened; now by default.
    public func signNotification(
        type: String,
        sub: String,
        clientID: String,
        email: String? = nil,
        isPrivateEmail: Bool? = nil,
        jti: String? = nil,
        eventTime: Date? = nil
    ) throws -> String {
        let now = self.now
        // A known user's subject is written as the team that owns the client id now sees it.
        let sub = state.withLock { state in
            guard let user = state.user(sub: sub) else { return sub }
            return state.transfers.subject(of: user.sub, team: state.teamOfClient[clientID] ?? state.transfers.primaryTeam)
        }
        var event: [(key: String, value: any Sendable)] = [
            (key: "type", value: type),
            (key: "sub", value: sub),
            (key: "event_time", value: Int(((eventTime ?? now).timeIntervalSince1970 * 1000).rounded())),
        ]
        if let email {
            event.append((key: "email", value: email))
        }
        if let isPrivateEmail {
            event.append((key: "is_private_email", value: isPrivateEmail ? "true" : "false"))
        }
        let iat = Int(now.timeIntervalSince1970)
        let claims: [String: any Sendable] = [
            "iss": Self.issuer,
            "aud": clientID,
            "exp": iat + 86_400,
            "iat": iat,
            "jti": jti ?? RandomToken.base64URL(byteCount: 16),
            "events": String(decoding: try JSONText.object(event), as: UTF8.self),
        ]
        return try sign(payload: JSONText.object(claims), headerOverrides: [:])
    }

    /// The key id that signs from now on.
    public var currentSigningKeyID: String {
        state.withLock { $0.signingKeys.last!.kid }
    }

    /// The key ids published at `/auth/keys`, oldest first.
    public var signingKeyIDs: [String] {
        state.withLock { $0.signingKeys.map(\.kid) }
    }

    /// Adds a fresh signing key and signs with it from now on; the older keys stay published, as Apple keeps several
    /// keys live. Returns the new key id.
    @discardableResult
    public func rotateSigningKey() throws -> String {
        let key = try EmulatorSigningKey.generate()
        state.withLock { $0.signingKeys.append(key) }
        return key.kid
    }

    /// Stops publishing a key that no longer signs (the current key stays). Returns whether a key was removed.
    @discardableResult
    public func retireSigningKey(kid: String) -> Bool {
        state.withLock { state in
            guard let index = state.signingKeys.firstIndex(where: { $0.kid == kid }),
                index != state.signingKeys.count - 1
            else { return false }
            state.signingKeys.remove(at: index)
            return true
        }
    }

    /// The JWKS document served at `/auth/keys`: `{"keys":[{"kty":"RSA","kid","use":"sig","alg":"RS256","n","e"}]}`.
    public func jsonWebKeySet() throws -> Data {
        let keys = state.withLock { $0.signingKeys }
        let jwks: [any Sendable] = try keys.map { try $0.jwk() }
        return try JSONText.object(["keys": jwks], order: ["keys", "kty", "kid", "use", "alg", "n", "e"])
    }

    /// Signs `payload` with the current key under the header `{"kid","alg":"RS256"}` changed by `headerOverrides`.
    func sign(payload: Data, headerOverrides: [String: (any Sendable)?]) throws -> String {
        let key = state.withLock { $0.signingKeys.last! }
        var header: [String: any Sendable] = ["kid": key.kid, "alg": "RS256"]
        for (name, value) in headerOverrides {
            header[name] = value
        }
        let jws = try key.signCompact(header: JSONText.object(header, order: JSONText.headerOrder), payload: payload)
        state.withLock { $0.signedJWS.append(jws) }
        return jws
    }

    /// base64url of the left half of SHA-256 over the ASCII value: `c_hash` and `at_hash`.
    static func halfHash(_ value: String) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Data(value.utf8))).prefix(16))
    }
}
