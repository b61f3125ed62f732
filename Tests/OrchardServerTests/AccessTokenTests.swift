import Accounts
import AppleIDEmulator
import Foundation
import JWTKit
import NIOHTTP1
import OrchardServer
import OrchardTesting
import SQLKit
import Storage
import Synchronization
import Testing

@Suite("Access tokens for the app's other backends through the HTTP API")
struct AccessTokenTests {
    /// A JWT's header and claims, decoded without checking anything.
    static func parts(_ token: String) throws -> (header: [String: Any], claims: [String: Any]) {
        let pieces = token.split(separator: ".", omittingEmptySubsequences: false)
        try #require(pieces.count == 3)
        func json(_ piece: Substring) throws -> [String: Any] {
            var text = piece.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            text += String(repeating: "=", count: (4 - text.count % 4) % 4)
            let data = try #require(Data(base64Encoded: text))
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        return (try json(pieces[0]), try json(pieces[1]))
    }

    /// `POST /v1/session/token` for `session`: the token, or a failure with the answer.
    static func token(_ h: OrchardHarness, _ session: String) async throws -> String {
        let answer = try await h.request(.POST, "/v1/session/token", bearer: session)
        #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
        return try #require(answer["access_token"])
    }

    /// The key ids `GET /.well-known/jwks.json` publishes.
    static func publishedKeyIDs(_ h: OrchardHarness) async throws -> [String] {
        let keys = try #require(try await h.request(.GET, "/.well-known/jwks.json").json["keys"] as? [[String: Any]])
        return keys.compactMap { $0["kid"] as? String }
    }

    struct AnyClaims: JWTPayload {
        let sub: SubjectClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    @Test("a token carries exactly the contract's claims, ES256 with typ at+jwt, and verifies against the served key set")
    func claimsAndSignature() async throws {
        try await OrchardHarness.with(
            configure: { $0.accessTokens.issuer = "https://auth.example.com" },
            { h in
                let user = h.emulator.makeUser(email: "token.user@example.com", firstName: "Tokyo", lastName: "Tokenson")
                let session = try await h.signUp(user, name: ["first_name": "Tokyo", "last_name": "Tokenson"], device: "phone")
                let answer = try await h.request(.POST, "/v1/session/token", bearer: session)
                #expect(answer.status == 200)
                #expect(answer["token_type"] == "Bearer")
                #expect(answer.json["expires_in"] as? Int == 300)
                #expect(Set(answer.json.keys) == ["access_token", "token_type", "expires_in"])
                #expect(answer.header("Cache-Control") == "no-store")
                let token = try #require(answer["access_token"])

                let (header, claims) = try Self.parts(token)
                #expect(header["alg"] as? String == "ES256")
                #expect(header["typ"] as? String == "at+jwt")
                let kid = try #require(header["kid"] as? String)
                #expect(Set(claims.keys) == ["iss", "sub", "sid", "client_id", "aud", "iat", "nbf", "exp", "jti"])
                let shown = try await h.request(.GET, "/v1/session", bearer: session)
                let accountID = try #require((shown.json["account"] as? [String: Any])?["id"] as? String)
                let sessionID = try #require(try await DeviceSessionsTests.sessions(h, session).first?["id"] as? String)
                #expect(claims["iss"] as? String == "https://auth.example.com")
                #expect(claims["aud"] as? String == "https://auth.example.com", "one audience is a string")
                #expect(claims["sub"] as? String == accountID)
                #expect(claims["sid"] as? String == sessionID)
                #expect(claims["client_id"] as? String == OrchardHarness.clientID)
                let iat = try #require(claims["iat"] as? Int)
                #expect(claims["nbf"] as? Int == iat)
                #expect(claims["exp"] as? Int == iat + 300)
                #expect(abs(Double(iat) - h.clock.now().timeIntervalSince1970) < 2)
                for secret in [user.sub, "token.user@example.com", "Tokyo", "Tokenson", session] {
                    #expect(!token.contains(secret) && !claims.values.contains { "\($0)".contains(secret) })
                }

                let keySet = try await h.request(.GET, "/.well-known/jwks.json")
                #expect(keySet.status == 200)
                #expect(keySet.header("Cache-Control") == "max-age=300")
                let keys = try #require(keySet.json["keys"] as? [[String: Any]])
                #expect(keys.map { $0["kid"] as? String } == [kid])
                #expect(keys.first?["kty"] as? String == "EC" && keys.first?["crv"] as? String == "P-256")
                #expect(keys.first?["d"] == nil, "no private part")
                let verifier = try await JWTKeyCollection().add(jwksJSON: String(decoding: keySet.body, as: UTF8.self))
                let verified = try await verifier.verify(token, as: AnyClaims.self)
                #expect(verified.sub.value == accountID)
                var tampered = Array(token)
                tampered[tampered.count - 5] = tampered[tampered.count - 5] == "A" ? "B" : "A"
                await #expect(throws: (any Error).self) { try await verifier.verify(String(tampered), as: AnyClaims.self) }

                let discovery = try await h.request(.GET, "/.well-known/openid-configuration")
                #expect(discovery.status == 200)
                #expect(Set(discovery.json.keys) == ["issuer", "jwks_uri", "id_token_signing_alg_values_supported"])
                #expect(discovery["issuer"] == "https://auth.example.com")
                #expect((discovery["jwks_uri"] ?? "").hasSuffix("/.well-known/jwks.json"))
                #expect(discovery.json["id_token_signing_alg_values_supported"] as? [String] == ["ES256"])
            }
        )
    }

    @Test("a token's client_id is its session's: a session from the app keeps the app's after a sign-in on the web")
    func clientIDOfTheSession() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let appSession = try await h.signUp(user)
            let web = try await h.signIn(user, clientID: OrchardHarness.webClientID).response
            #expect(web.status == 200)
            let webSession = try #require((web.json["session"] as? [String: Any])?["token"] as? String)
            // The account's latest sign-in was the web's; each session's tokens still name the app it was made in.
            let fromApp = try Self.parts(try await Self.token(h, appSession)).claims
            let fromWeb = try Self.parts(try await Self.token(h, webSession)).claims
            #expect(fromApp["sub"] as? String == fromWeb["sub"] as? String)
            #expect(fromApp["client_id"] as? String == OrchardHarness.clientID)
            #expect(fromWeb["client_id"] as? String == OrchardHarness.webClientID)
        }
    }

    @Test("several audiences are an array; the lifetime is ORCHARD_ACCESS_TOKEN_TTL")
    func audiencesAndLifetime() async throws {
        try await OrchardHarness.with(
            configure: {
                $0.accessTokens.audiences = ["https://api.example.com", "https://gateway.example.com"]
                $0.accessTokens.ttl = .seconds(60)
            },
            { h in
                let token = try await Self.token(h, try await h.signUp(h.emulator.makeUser()))
                let claims = try Self.parts(token).claims
                #expect(claims["aud"] as? [String] == ["https://api.example.com", "https://gateway.example.com"])
                #expect((claims["exp"] as? Int ?? 0) - (claims["iat"] as? Int ?? 0) == 60)
            }
        )
    }

    @Test("no token for a session that ended, expired or never was, and none without a session")
    func noTokenWithoutLiveSession() async throws {
        try await OrchardHarness.with(
            configure: { $0.lifecycle.sessionTTL = .seconds(3600) },
            { h in
                let user = h.emulator.makeUser()
                let signedOut = try await h.signUp(user)
                #expect(try await h.request(.DELETE, "/v1/session", bearer: signedOut).status == 204)
                let refused = try await h.request(.POST, "/v1/session/token", bearer: signedOut)
                #expect(refused.status == 401)
                #expect(refused.code == "session_revoked")
                #expect(refused["reason"] == "signed_out")
                #expect(try await h.request(.POST, "/v1/session/token", bearer: "unknown").code == "session_invalid")
                #expect(try await h.request(.POST, "/v1/session/token").code == "session_invalid")
                let other = try await h.signUp(user, device: "other")
                let caller = try await h.signUp(user, device: "caller")
                #expect(try await h.request(.DELETE, "/v1/sessions", bearer: caller).json["ended"] as? Int == 1)
                #expect(try await h.request(.POST, "/v1/session/token", bearer: other).code == "session_revoked")
                h.clock.advance(by: 3601)
                #expect(try await h.request(.POST, "/v1/session/token", bearer: caller).code == "session_invalid")
            }
        )
    }

    @Test("the key set is answered from memory: a storm of requests reads the database at most once per 5 s")
    func keySetFromMemory() async throws {
        let counting = Mutex<CountingDatabaseClient?>(nil)
        let countStatements: @Sendable (any DatabaseClient) -> any DatabaseClient = { base in
            let client = CountingDatabaseClient(base)
            counting.withLock { $0 = client }
            return client
        }
        try await OrchardHarness.with(
            wrapDatabase: countStatements,
            jobs: .byTest,
            { h in
                let database = try #require(counting.withLock { $0 })
                #expect(try await Self.publishedKeyIDs(h).count == 1)
                database.reset()
                for _ in 0..<200 { #expect(try await h.request(.GET, "/.well-known/jwks.json").status == 200) }
                // Nothing but, on PostgreSQL, the session listener's self-test (its NOTIFY goes over the pool).
                #expect(database.sent.filter { !$0.contains("pg_notify") }.isEmpty, "\(database.sent)")
                h.clock.advance(by: 6)
                for _ in 0..<50 { #expect(try await h.request(.GET, "/.well-known/jwks.json").status == 200) }
                #expect(database.sent.filter { $0.contains("FROM signing_keys") }.count == 1, "\(database.sent)")
            }
        )
    }

    @Test("keys rotate on schedule: the next key is published ttl + 300 s before it signs, the old one kept until its last token expired")
    func rotationOnSchedule() async throws {
        try await OrchardHarness.with(
            configure: {
                $0.accessTokens.ttl = .seconds(60)
                $0.accessTokens.keyLifetime = .seconds(3600)
                $0.lifecycle.sessionTTL = .seconds(30 * 86_400)
            },
            jobs: .byTest,
            { h in
                let session = try await h.signUp(h.emulator.makeUser())
                let start = h.clock.now()
                let first = try Self.parts(try await Self.token(h, session)).header["kid"] as? String
                #expect(try await Self.publishedKeyIDs(h) == [first])

                // Until 360 s (ttl + 300) before the first key's lifetime ends, nothing else is published.
                h.clock.set(start.addingTimeInterval(3600 - 360 - 5))
                #expect(try await Self.publishedKeyIDs(h) == [first])
                // Then the next key is published, and the first still signs. (A replica that reads the keys later than
                // this makes the next key later, and it takes over ttl + 300 s after that.)
                h.clock.set(start.addingTimeInterval(3600 - 360))
                let published = try await Self.publishedKeyIDs(h)
                #expect(published.count == 2 && published.contains(first ?? ""))
                let next = try #require(published.first { $0 != first })
                #expect(try Self.parts(try await Self.token(h, session)).header["kid"] as? String == first)
                #expect(try await h.rowCount("signing_keys") == 2, "made once, whoever asked")

                // From the end of its lifetime the next key signs; the first stays published for the tokens it signed.
                h.clock.set(start.addingTimeInterval(3600 + 1))
                #expect(try Self.parts(try await Self.token(h, session)).header["kid"] as? String == next)
                #expect(Set(try await Self.publishedKeyIDs(h)) == Set([first, next].compactMap { $0 }))
                let listed = try await Self.keyStates(h)
                #expect(listed[first ?? ""] == "retired" && listed[next] == "current", "\(listed)")

                // Once its last token (signed at most at 3600) has expired, it is no longer published; listed, it is
                // still retired (the contract's states), published until a moment ago.
                h.clock.set(start.addingTimeInterval(3600 + 60 + 2))
                #expect(try await Self.publishedKeyIDs(h) == [next])
                let gone = try #require(try await h.lifecycle.accessTokens.keys.list().first { $0.id == first })
                #expect(gone.state == .retired)
                #expect((gone.publishedUntil ?? .distantFuture) < h.clock.now())
                // A day later it is gone from the database too.
                h.clock.set(start.addingTimeInterval(3600 + 60 + 86_400 + 60))
                _ = try await Self.publishedKeyIDs(h)
                #expect(try await h.rowCount("signing_keys") == 2, "the next-next key is published by now, the first is removed")
                #expect(try await h.rowCount("signing_keys WHERE id = '\(first ?? "")'") == 0)
            }
        )
    }
}

extension AccessTokenTests {
    /// The harness's keys as the lifecycle lists them (no process: `orchard keys` is tested in `KeysCommandTests`):
    /// state by key id.
    static func keyStates(_ h: OrchardHarness) async throws -> [String: String] {
        Dictionary(uniqueKeysWithValues: try await h.lifecycle.accessTokens.keys.list().map { ($0.id, $0.state.rawValue) })
    }
}
