import AppleID
import Foundation
import Logging
import OrchardTesting

/// Keys and names shared by the suites: RSA key generation is slow, so it happens once per test run.
enum Shared {
    /// The test "Apple" key, published under `ORCHARDTEST1`.
    static let apple: AppleIDTestTokens = {
        // Force-try: key generation does not fail on a working machine.
        try! AppleIDTestTokens(kid: "ORCHARDTEST1")
    }()

    /// Another RSA key, published under the same kid: a forger's key.
    static let forger: AppleIDTestTokens = {
        // Force-try: as above.
        try! AppleIDTestTokens(kid: "ORCHARDTEST1")
    }()

    /// The configured client id.
    static let clientID = "com.example.orchard"

    /// A second configured client id (the web flow's Services ID).
    static let webClientID = "com.example.orchard.web"

    /// A logger that drops everything.
    static let logger = Logger(label: "AppleIDTests", factory: { _ in SwiftLogNoOpLogHandler() })
}

/// A verifier over a counting key source serving ``Shared/apple``'s key, with a test clock.
struct VerifierHarness {
    let clock: TestWallClock
    let source: AppleIDCountingKeySource
    let keys: AppleKeySet
    let verifier: AppleTokenVerifier

    init(
        clientIDs: [String] = [Shared.clientID, Shared.webClientID],
        leeway: Duration = .seconds(60),
        jwksJSON: Data = Shared.apple.jwksJSON(),
        delay: Duration = .zero
    ) {
        clock = TestWallClock()
        source = AppleIDCountingKeySource(jwksJSON: jwksJSON, delay: delay)
        keys = AppleKeySet(source: source, clock: clock, logger: Shared.logger)
        verifier = AppleTokenVerifier(keys: keys, clientIDs: clientIDs, clock: clock, leeway: leeway)
    }

    /// Identity claims issued now by the test clock for the configured client id.
    func claims(aud: String = Shared.clientID, nonce: String? = nil) -> [String: Any] {
        AppleIDTestTokens.identityClaims(aud: aud, iat: clock.now(), nonce: nonce)
    }

    /// The code `verifyIdentityToken` fails with, or `nil` when it passes.
    func identityFailure(_ token: String, expectedAudience: String? = nil) async -> AppleIDError.Code? {
        do {
            _ = try await verifier.verifyIdentityToken(token, expectedAudience: expectedAudience)
            return nil
        } catch {
            return error.code
        }
    }

    /// The code `verifyNotification` fails with, or `nil` when it passes.
    func notificationFailure(_ jws: String) async -> AppleIDError.Code? {
        do {
            _ = try await verifier.verifyNotification(jws)
            return nil
        } catch {
            return error.code
        }
    }
}
