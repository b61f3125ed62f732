import Foundation

/// Verifies Apple's identity tokens and server-to-server notifications.
///
/// Both go through the same steps, in this order, and the first failure is thrown:
/// 1. three base64url parts whose header and payload are JSON objects, with the claims Apple sends
///    (`identity_token_malformed`);
/// 2. header `alg` exactly `RS256`, checked before any key is looked at (`identity_token_signature`);
/// 3. header `kid` present in Apple's key set (see ``AppleKeySet`` for the refetch rule) and the signature valid with
///    exactly that key (`identity_token_signature`);
/// 4. `iss` exactly ``appleIssuer``, whatever base URL Apple is reached at (`identity_token_issuer`);
/// 5. `aud` one of ``clientIDs`` and, when given, the expected audience (`identity_token_audience`);
/// 6. `exp` later than now − leeway, and `iat` not later than now + leeway, by the injected clock
///    (`identity_token_expired`).
///
/// The nonce is not checked here, since it needs Orchard's nonce store (see ``AppleNonce``); ``inspect(_:audiences:at:nonce:)``
/// checks it against a given raw nonce. ``inspect(_:audiences:at:nonce:)`` runs the same step functions, so the report
/// and the verdict cannot disagree.
public struct AppleTokenVerifier: Sendable {
    /// The issuer of every genuine identity token and notification.
    public static let appleIssuer = "https://appleid.apple.com"

    /// Apple's keys.
    public let keys: AppleKeySet
    /// The client ids (App IDs and Services IDs) an `aud` may name.
    public let clientIDs: [String]
    /// The clock skew allowed on `exp` and `iat`.
    public let leeway: Duration
    let clock: any WallClock

    /// Creates a verifier.
    /// - Parameters:
    ///   - keys: Apple's key set.
    ///   - clientIDs: The client ids an `aud` may name (`APPLE_CLIENT_IDS`).
    ///   - clock: The clock the validity window is checked against.
    ///   - leeway: The clock skew allowed on `exp` and `iat` (`ORCHARD_CLOCK_LEEWAY`).
    public init(keys: AppleKeySet, clientIDs: [String], clock: any WallClock, leeway: Duration = .seconds(60)) {
        self.keys = keys
        self.clientIDs = clientIDs
        self.clock = clock
        self.leeway = leeway
    }

    /// Verifies an identity token and returns its claims.
    /// - Parameters:
    ///   - token: The compact JWS the app received from Apple.
    ///   - expectedAudience: The `client_id` the request named, which `aud` must then equal.
    /// - Throws: ``AppleIDError`` with the code of the first failed step (see the type's documentation), or
    ///   `apple_unavailable` when Apple's keys cannot be had.
    public func verifyIdentityToken(_ token: String, expectedAudience: String? = nil) async throws(AppleIDError) -> AppleIdentityClaims {
        let (jws, claims) = try DecodedJWS.decode(token, as: AppleIdentityClaims.self)
        try await verifySteps(jws, expectedAudience: expectedAudience, now: clock.now())
        return claims
    }

    /// Verifies a server-to-server notification (the `payload` Apple POSTs) and returns its claims.
    ///
    /// The steps are those of identity tokens; the server answers any failure with `notification_invalid`.
    /// - Throws: ``AppleIDError`` with the code of the first failed step.
    public func verifyNotification(_ jws: String) async throws(AppleIDError) -> AppleNotification {
        let (decoded, notification) = try DecodedJWS.decode(jws, as: AppleNotification.self)
        try await verifySteps(decoded, expectedAudience: nil, now: clock.now())
        return notification
    }

    /// Steps 2 to 6, in order.
    private func verifySteps(_ jws: DecodedJWS, expectedAudience: String?, now: Date) async throws(AppleIDError) {
        try await checkSignature(jws)
        try Self.checkIssuer(jws.envelope)
        try Self.checkAudience(jws.envelope, allowed: clientIDs, expected: expectedAudience)
        try checkExpiry(jws.envelope, now: now)
        try checkIssuedAt(jws.envelope, now: now)
    }
}
