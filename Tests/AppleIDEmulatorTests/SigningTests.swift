import AppleIDEmulator
import Crypto
import Foundation
import JWTKit
import NIOCore
import NIOHTTP1
import OrchardTesting
import Testing

/// Claims an identity token carries, as a test reads them through jwt-kit.
struct TestIdentityClaims: JWTPayload {
    var iss: String
    var aud: String
    var sub: String
    var exp: Int
    var iat: Int

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

@Suite("Keys, identity tokens and notifications")
struct SigningTests {
    @Test("/auth/keys serves Apple's JWKS shape with RSA signing keys")
    func jwksShape() async throws {
        try await EmulatorHarness.with { h in
            let answer = try await h.send(.GET, "/auth/keys")
            #expect(answer.status == 200)
            #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
            #expect(Set(answer.json.keys) == ["keys"])
            let keys = try #require(answer.json["keys"] as? [[String: Any]])
            #expect(keys.count == 1)
            let key = try #require(keys.first)
            #expect(Set(key.keys) == ["kty", "kid", "use", "alg", "n", "e"])
            #expect(key["kty"] as? String == "RSA")
            #expect(key["use"] as? String == "sig")
            #expect(key["alg"] as? String == "RS256")
            #expect(key["e"] as? String == "AQAB")
            let kid = try #require(key["kid"] as? String)
            #expect(kid.count == 10 && kid.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
            #expect(kid == h.emulator.currentSigningKeyID)
            let n = try #require(key["n"] as? String)
            let modulus = try #require(JWSBytes.decode(n))
            #expect(modulus.count == 256)
        }
    }

    @Test("identity tokens verify with jwt-kit against the served JWKS and carry Apple's claims")
    func identityTokenVerifies() async throws {
        try await EmulatorHarness.with { h in
            let user = h.emulator.makeUser(firstName: "Ada", lastName: "Lovelace")
            let nonce = SHA256.hash(data: Data("raw-nonce".utf8)).map { String(format: "%02x", $0) }.joined()
            let authorization = try h.emulator.authorize(user: user, clientID: EmulatorHarness.appID, nonce: nonce)
            let keys = try await h.servedKeys()
            let verified = try await keys.verify(authorization.identityToken, as: TestIdentityClaims.self)
            #expect(verified.sub == user.sub)
            #expect(verified.aud == EmulatorHarness.appID)

            let (header, payload) = try EmulatorHarness.decode(authorization.identityToken)
            #expect(Set(header.keys) == ["kid", "alg"])
            #expect(header["alg"] as? String == "RS256")
            #expect(header["kid"] as? String == h.emulator.currentSigningKeyID)
            let now = Int(h.clock.now().timeIntervalSince1970)
            #expect(payload["iss"] as? String == "https://appleid.apple.com")
            #expect(payload["iat"] as? Int == now)
            #expect(payload["exp"] as? Int == now + 86_400)
            #expect(payload["auth_time"] as? Int == now)
            #expect(payload["nonce"] as? String == nonce)
            #expect(payload["nonce_supported"] as? Bool == true)
            #expect(payload["email"] as? String == user.email)
            #expect(payload["email_verified"] as? Bool == true)
            #expect(payload["is_private_email"] as? Bool == true)
            #expect(payload["real_user_status"] as? Int == 2)
            let cHash = Data(SHA256.hash(data: Data(authorization.authorizationCode.utf8))).prefix(16)
            #expect(payload["c_hash"] as? String == JWSBytes.encode(Data(cHash)))

            let withoutNonce = try EmulatorHarness.decode(try h.emulator.authorize(user: user, clientID: EmulatorHarness.appID).identityToken)
            #expect(withoutNonce.payload["nonce"] == nil)
        }
    }

    @Test("users look like Apple's: subject format, private relay email")
    func userShape() async throws {
        try await EmulatorHarness.with { h in
            let user = h.emulator.makeUser()
            #expect(user.sub.wholeMatch(of: /\d{6}\.[0-9a-f]{32}\.\d{4}/) != nil)
            #expect(user.email?.wholeMatch(of: /[a-z0-9]{10}@privaterelay\.appleid\.com/) != nil)
            #expect(user.isPrivateEmail)
            let shared = h.emulator.makeUser(email: "ada@example.com")
            #expect(!shared.isPrivateEmail)
            #expect(h.emulator.user(sub: shared.sub) == shared)
        }
    }

    @Test("after a key rotation new tokens use the new kid, and tokens signed by the old key still verify")
    func keyRotation() async throws {
        try await EmulatorHarness.with { h in
            let user = h.emulator.makeUser()
            let before = try h.emulator.authorize(user: user, clientID: EmulatorHarness.appID).identityToken
            let oldKID = h.emulator.currentSigningKeyID
            let newKID = try h.emulator.rotateSigningKey()
            #expect(newKID != oldKID)
            #expect(h.emulator.signingKeyIDs == [oldKID, newKID])
            let after = try h.emulator.authorize(user: user, clientID: EmulatorHarness.appID).identityToken
            #expect(try EmulatorHarness.decode(after).header["kid"] as? String == newKID)

            let answer = try await h.send(.GET, "/auth/keys")
            let kids = (answer.json["keys"] as? [[String: Any]])?.compactMap { $0["kid"] as? String }
            #expect(kids == [oldKID, newKID])
            let keys = try await h.servedKeys()
            _ = try await keys.verify(before, as: TestIdentityClaims.self)
            _ = try await keys.verify(after, as: TestIdentityClaims.self)

            #expect(!h.emulator.retireSigningKey(kid: newKID))
            #expect(h.emulator.retireSigningKey(kid: oldKID))
            #expect(h.emulator.signingKeyIDs == [newKID])
        }
    }

    @Test("tests can sign tokens with chosen claims and header fields")
    func customTokens() async throws {
        try await EmulatorHarness.with { h in
            var claims = h.emulator.identityTokenClaims(user: h.emulator.makeUser(), clientID: EmulatorHarness.appID)
            claims["iss"] = "https://account.apple.com"
            let wrongIssuer = try h.emulator.signIdentityToken(claims: claims, headerOverrides: ["kid": "unknownkid1", "typ": "JWT"])
            let (header, payload) = try EmulatorHarness.decode(wrongIssuer)
            #expect(payload["iss"] as? String == "https://account.apple.com")
            #expect(header["kid"] as? String == "unknownkid1")
            #expect(header["typ"] as? String == "JWT")

            let noKID = try h.emulator.signIdentityToken(claims: claims, headerOverrides: ["kid": nil])
            #expect(try EmulatorHarness.decode(noKID).header["kid"] == nil)

            struct Minimal: Encodable {
                var iss = "https://appleid.apple.com"
                var aud = "com.example.app"
                var sub = "000001.00000000000000000000000000000000.0001"
                var emailVerified = "true"

                enum CodingKeys: String, CodingKey {
                    case iss, aud, sub
                    case emailVerified = "email_verified"
                }
            }
            let encodable = try h.emulator.signIdentityToken(Minimal())
            #expect(try EmulatorHarness.decode(encodable).payload["email_verified"] as? String == "true")
            let keys = try await h.servedKeys()
            await #expect(throws: (any Error).self) {
                _ = try await keys.verify(encodable, as: TestIdentityClaims.self)  // lacks exp and iat
            }
        }
    }

    @Test("a notification is an RS256 JWS whose events claim is a string holding the event JSON")
    func notificationShape() async throws {
        try await EmulatorHarness.with { h in
            let user = h.emulator.makeUser()
            let jws = try h.emulator.signNotification(
                type: "email-disabled",
                sub: user.sub,
                clientID: EmulatorHarness.appID,
                email: user.email,
                isPrivateEmail: true
            )
            let (header, payload) = try EmulatorHarness.decode(jws)
            #expect(Set(header.keys) == ["kid", "alg"])
            #expect(Set(payload.keys) == ["iss", "aud", "exp", "iat", "jti", "events"])
            let now = Int(h.clock.now().timeIntervalSince1970)
            #expect(payload["iss"] as? String == "https://appleid.apple.com")
            #expect(payload["aud"] as? String == EmulatorHarness.appID)
            #expect(payload["iat"] as? Int == now)
            #expect(payload["exp"] as? Int == now + 86_400)
            let jti = try #require(payload["jti"] as? String)
            #expect(jti.count == 22)
            let events = try #require(payload["events"] as? String)
            let event = try #require(try JSONSerialization.jsonObject(with: Data(events.utf8)) as? [String: Any])
            #expect(event["type"] as? String == "email-disabled")
            #expect(event["sub"] as? String == user.sub)
            #expect(event["event_time"] as? Int == now * 1000)
            #expect(event["email"] as? String == user.email)
            #expect(event["is_private_email"] as? String == "true")
            _ = try await h.servedKeys().verify(jws, as: NotificationClaims.self)

            let consent = try h.emulator.signNotification(type: "consent-revoked", sub: user.sub, clientID: EmulatorHarness.appID, jti: "fixed-jti")
            let consentPayload = try EmulatorHarness.decode(consent).payload
            #expect(consentPayload["jti"] as? String == "fixed-jti")
            let consentEvent = try JSONSerialization.jsonObject(with: Data((consentPayload["events"] as? String ?? "").utf8)) as? [String: Any]
            #expect(consentEvent.map { Set($0.keys) } == ["type", "sub", "event_time"])
        }
    }

    @Test("the configuration takes a public key or a .p8, and makeClientKey writes PKCS#8 PEM")
    func clientKeyFormats() throws {
        let key = AppleEmulatorConfiguration.makeClientKey()
        #expect(key.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(key.publicKeyPEM.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        for pem in [key.privateKeyPEM, key.publicKeyPEM] {
            _ = try AppleEmulator(
                configuration: AppleEmulatorConfiguration(teamID: "T", keyID: "K", clientIDs: ["a"], clientPublicKeyPEM: pem)
            )
        }
        #expect {
            _ = try AppleEmulator(
                configuration: AppleEmulatorConfiguration(teamID: "T", keyID: "K", clientIDs: ["a"], clientPublicKeyPEM: "nonsense")
            )
        } throws: { error in
            (error as? AppleEmulatorError)?.kind == .invalidConfiguration
        }
    }
}

/// Claims a notification carries, as a test reads them through jwt-kit.
struct NotificationClaims: JWTPayload {
    var iss: String
    var aud: String
    var jti: String
    var events: String

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
