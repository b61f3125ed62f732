import Foundation
import JWTKit

/// Signs the client secrets Apple's REST endpoints authenticate Orchard with, and keeps them until they are half spent.
///
/// A client secret is an ES256 JWT signed with the team's Sign in with Apple key (the `.p8`): header `alg` ES256 and
/// `kid` the key id; claims `iss` the team id, `sub` the client id, `aud` `https://appleid.apple.com`, `iat` now and
/// `exp` now + lifetime. One is cached per client id and replaced once less than half its lifetime remains, by the
/// injected clock.
public actor ClientSecretSigner {
    /// The longest lifetime Apple accepts: 15,777,000 seconds (about six months).
    public static let maximumLifetime: Duration = .seconds(15_777_000)

    /// The developer team id.
    public let teamID: String
    /// The Sign in with Apple key's id.
    public let keyID: String
    /// How long each secret is valid.
    public let lifetime: Duration

    private let signingKey: ES256PrivateKey
    private var signingKeys: JWTKeyCollection?
    private let clock: any WallClock
    private var cache: [String: (secret: Redacted<String>, issuedAt: Date)] = [:]

    /// Loads the signing key.
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
        guard lifetime > .zero, lifetime <= Self.maximumLifetime else {
            throw .invalidConfiguration("the client secret lifetime must be more than 0 and at most 15777000 seconds, not \(lifetime)")
        }
        guard !teamID.isEmpty, !keyID.isEmpty else {
            throw .invalidConfiguration("the team id and the key id must not be empty")
        }
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pem: privateKeyPEM)
        } catch {
            throw .invalidConfiguration("the Sign in with Apple key is not a PKCS#8 PEM P-256 private key (a .p8 file)")
        }
        self.teamID = teamID
        self.keyID = keyID
        self.lifetime = lifetime
        self.clock = clock
        self.signingKey = key
    }

    /// A client secret for `clientID`: the cached one while more than half its lifetime remains, else a new one.
    /// - Throws: `invalid_configuration` if signing fails (it does not with a key that loaded).
    public func secret(for clientID: String) async throws(AppleIDError) -> Redacted<String> {
        let now = clock.now()
        if let cached = cache[clientID] {
            let age = now.timeIntervalSince(cached.issuedAt)
            if age >= 0, age < lifetime.timeInterval / 2 { return cached.secret }
        }
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let claims = ClientSecretClaims(
            iss: teamID,
            sub: clientID,
            aud: AppleTokenVerifier.appleIssuer,
            iat: issuedAt,
            exp: issuedAt + lifetime.components.seconds
        )
        var header = JWTHeader()
        header.alg = "ES256"
        header.kid = keyID
        do {
            let token = try await collection().sign(claims, kid: JWKIdentifier(string: keyID), header: header)
            let secret = Redacted(token)
            cache[clientID] = (secret, Date(timeIntervalSince1970: TimeInterval(issuedAt)))
            return secret
        } catch {
            throw .invalidConfiguration("the client secret could not be signed")
        }
    }

    /// The key collection holding the signing key alone (built on first use: adding to it needs `await`).
    private func collection() async -> JWTKeyCollection {
        if let signingKeys { return signingKeys }
        let made = await JWTKeyCollection().add(ecdsa: signingKey, kid: JWKIdentifier(string: keyID))
        signingKeys = made
        return made
    }
}
