import AppleID
public import Foundation
import Logging
import OrchardTesting

/// The identity-token and notification parser under fuzzing: `AppleTokenVerifier` with every genuine Apple JWKS of the
/// test fixtures and one local signing key.
///
/// An input's first byte picks how the rest is used:
/// - even: the rest is the token itself (seeded with genuine Apple-signed tokens), so the fuzzer works on the JWS
///   framing, the base64url, the header and the signature check;
/// - odd: the rest is a payload that the local key signs, so the fuzzer reaches the claims' decoding and checks.
///
/// Besides crashes, a bug is a token the verifier accepts whose issuer, audience or expiry it should have refused.
public struct TokenFuzzing: Sendable {
    /// The instant the verifier's clock stands at: the genuine token `idtoken-vapor-jwt-dMlERBaFdK-2025-02` is valid.
    public static let now = Date(timeIntervalSince1970: 1_738_495_979)
    /// The local key's audience, beside the genuine tokens' audiences.
    public static let localAudience = "com.example.orchard.app"

    let verifier: AppleTokenVerifier
    let signer: AppleIDTestTokens
    let clientIDs: [String]

    /// The shared instance (an RSA key generation and the fixtures' JWKS read once).
    public static let shared: TokenFuzzing = {
        do {
            return try TokenFuzzing()
        } catch {
            fatalError("cannot set up the token fuzzer: \(error)")
        }
    }()

    init() throws {
        let fixtures = Self.fixturesDirectory
        var keys: [String: Any] = [:]
        var audiences: Set<String> = [Self.localAudience]
        for name in try FileManager.default.contentsOfDirectory(atPath: fixtures.path).sorted() where name.hasSuffix(".json") {
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: fixtures.appendingPathComponent(name)))
            guard let document = object as? [String: Any] else { continue }
            for key in document["keys"] as? [[String: Any]] ?? [] {
                if let kid = key["kid"] as? String { keys[kid] = key }
            }
            if let payload = document["payload"] as? [String: Any], let audience = payload["aud"] as? String {
                audiences.insert(audience)
            }
        }
        signer = try AppleIDTestTokens(kid: "FUZZLOCAL1")
        keys[signer.kid] = signer.jwk
        let jwks = try JSONSerialization.data(withJSONObject: ["keys": Array(keys.values)])
        clientIDs = audiences.sorted()
        verifier = AppleTokenVerifier(
            keys: AppleKeySet(
                source: try StaticAppleKeySource(json: jwks),
                clock: FixedClock(),
                logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
            ),
            clientIDs: clientIDs,
            clock: FixedClock()
        )
    }

    /// The genuine Apple tokens and JWKS the main package's tests use.
    public static var fixturesDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tests/AppleIDTests/Fixtures")
    }

    /// The token an input stands for (see the type's documentation).
    func token(_ input: Data) -> String {
        guard let mode = input.first else { return "" }
        let rest = input.dropFirst()
        if mode % 2 == 0 { return String(decoding: rest, as: UTF8.self) }
        // Force-try: the header is a dictionary of strings and the key signs any bytes.
        return try! signer.sign(payload: Data(rest))
    }

    /// Verifies the input as an identity token.
    public func identityToken(_ input: Data) {
        let token = token(input)
        let verifier = self.verifier
        let outcome = Fuzzer.blocking { () -> Result<AppleIdentityClaims, AppleIDError> in
            do throws(AppleIDError) {
                return .success(try await verifier.verifyIdentityToken(token))
            } catch {
                return .failure(error)
            }
        }
        guard case .success(let claims) = outcome else { return }
        if claims.iss != AppleTokenVerifier.appleIssuer { Fuzzer.bug("accepted issuer \(claims.iss)", input: input) }
        if !clientIDs.contains(claims.aud) { Fuzzer.bug("accepted audience \(claims.aud)", input: input) }
        if claims.exp.addingTimeInterval(60) < Self.now { Fuzzer.bug("accepted an expired token", input: input) }
    }

    /// Verifies the input as a server-to-server notification's JWS.
    public func notification(_ input: Data) {
        let token = token(input)
        let verifier = self.verifier
        let outcome = Fuzzer.blocking { () -> Result<AppleNotification, AppleIDError> in
            do throws(AppleIDError) {
                return .success(try await verifier.verifyNotification(token))
            } catch {
                return .failure(error)
            }
        }
        guard case .success(let notification) = outcome else { return }
        if notification.iss != AppleTokenVerifier.appleIssuer { Fuzzer.bug("accepted issuer \(notification.iss)", input: input) }
        if !clientIDs.contains(notification.aud) { Fuzzer.bug("accepted audience \(notification.aud)", input: input) }
    }
}

/// The verifier's clock, standing at ``TokenFuzzing/now``.
struct FixedClock: WallClock {
    func now() -> Date { TokenFuzzing.now }
}
