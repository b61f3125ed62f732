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
    /// Checks the client secrets sent to `/auth/token` and `/auth/revoke`.
    let clientSecretVerifier: ClientSecretVerifier
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
        guard !configuration.clientIDs.isEmpty else {
            throw AppleEmulatorError.invalidConfiguration("at least one client id is needed")
        }
        self.configuration = configuration
        self.clientSecretVerifier = ClientSecretVerifier(
            teamID: configuration.teamID,
            keyID: configuration.keyID,
            clientIDs: Set(configuration.clientIDs),
            publicKey: try configuration.clientPublicKey()
        )
        self.state = Mutex(
            EmulatorState(signingKey: try .generate(), latency: configuration.latency, notifyURL: configuration.notifyURL)
        )
        self.httpClient = httpClient
        self.logger = logger
    }

    /// The current instant by the configured clock.
    var now: Date { configuration.clock.now() }

    /// Makes a user and remembers it under its subject.
    ///
    /// - Parameters:
    ///   - sub: The subject; a fresh one in Apple's format by default.
    ///   - email: The address the app sees; a fresh private relay address by default.
    ///   - isPrivateEmail: Whether the address is a relay address; by default, whether it ends in
    ///     `@privaterelay.appleid.com`.
    public func makeUser(
        sub: String? = nil,
        email: String? = nil,
        isPrivateEmail: Bool? = nil,
        emailVerified: Bool = true,
        realUserStatus: Int = 2,
        firstName: String? = nil,
        lastName: String? = nil
    ) -> EmulatedUser {
        let email = email ?? EmulatedUser.makePrivateRelayEmail()
        let user = EmulatedUser(
            sub: sub ?? EmulatedUser.makeSubject(),
            email: email,
            isPrivateEmail: isPrivateEmail ?? email.hasSuffix("@\(EmulatedUser.privateRelayDomain)"),
            emailVerified: emailVerified,
            realUserStatus: realUserStatus,
            firstName: firstName,
            lastName: lastName
        )
        state.withLock { $0.remember(user) }
        return user
    }

    /// The user last seen with this subject, if any.
    public func user(sub: String) -> EmulatedUser? {
        state.withLock { $0.users[sub] }
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
        guard configuration.clientIDs.contains(clientID) else {
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
}
