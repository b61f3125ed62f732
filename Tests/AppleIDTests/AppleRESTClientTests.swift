import AppleID
import Foundation
import OrchardTesting
import Testing

@Suite("Apple's REST endpoints over HTTP")
struct AppleRESTClientTests {
    private let clientKey = AppleIDTestClientKey()

    private func secrets() throws -> ClientSecretSigner {
        try ClientSecretSigner(teamID: "TEAM123456", keyID: "KEY1234567", privateKeyPEM: clientKey.privateKeyPEM, clock: TestWallClock())
    }

    private static let tokenAnswer = #"{"access_token":"a.1","token_type":"bearer","expires_in":3600,"refresh_token":"r.1","id_token":"i.1"}"#

    private func failure(_ body: () async throws(AppleIDError) -> Void) async -> AppleIDError? {
        do {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    @Test("a code exchange posts the form Apple documents, with a valid client secret, and reads the tokens")
    func exchange() async throws {
        try await AppleIDStubServer.with { stub in
            stub.enqueue(.init(body: Self.tokenAnswer), for: "/auth/token")
            let client = stub.restClient(secrets: try secrets())
            let response = try await client.exchangeCode(Redacted("c.0.code+/="), clientID: "com.example.orchard", redirectURI: nil)
            #expect(response.refreshToken?.value == "r.1")
            #expect(response.idToken?.value == "i.1")
            let request = try #require(stub.received.first)
            #expect(request.method == "POST")
            #expect(request.contentType == "application/x-www-form-urlencoded")
            #expect(request.form["grant_type"] == "authorization_code")
            #expect(request.form["code"] == "c.0.code+/=")
            #expect(request.form["client_id"] == "com.example.orchard")
            #expect(request.form["redirect_uri"] == nil)
            let secret = try #require(request.form["client_secret"])
            #expect(clientKey.verifiedParts(of: secret)?.claims["sub"] as? String == "com.example.orchard")
        }
    }

    @Test("the web flow's exchange sends the redirect URI")
    func exchangeWithRedirect() async throws {
        try await AppleIDStubServer.with { stub in
            stub.enqueue(.init(body: Self.tokenAnswer), for: "/auth/token")
            let client = stub.restClient(secrets: try secrets())
            _ = try await client.exchangeCode(Redacted("c"), clientID: "web", redirectURI: "https://example.com/cb?x=1&y=2")
            #expect(stub.received.first?.form["redirect_uri"] == "https://example.com/cb?x=1&y=2")
        }
    }

    @Test("refresh-token validation posts grant_type=refresh_token and accepts an answer without a refresh token")
    func refresh() async throws {
        try await AppleIDStubServer.with { stub in
            stub.enqueue(.init(body: #"{"access_token":"a.2","token_type":"Bearer","expires_in":3600}"#), for: "/auth/token")
            let response = try await stub.restClient(secrets: try secrets()).validateRefreshToken(Redacted("r.1"), clientID: "app")
            #expect(response.refreshToken == nil)
            #expect(response.accessToken?.value == "a.2")
            #expect(stub.received.first?.form["grant_type"] == "refresh_token")
            #expect(stub.received.first?.form["refresh_token"] == "r.1")
        }
    }

    @Test("a revocation posts the token and its type hint", arguments: [TokenTypeHint.refreshToken, .accessToken])
    func revoke(hint: TokenTypeHint) async throws {
        try await AppleIDStubServer.with { stub in
            try await stub.restClient(secrets: try secrets()).revoke(Redacted("t.1"), hint: hint, clientID: "app")
            let request = try #require(stub.received.first)
            #expect(request.path == "/auth/revoke")
            #expect(request.form["token"] == "t.1")
            #expect(request.form["token_type_hint"] == hint.rawValue)
            #expect(request.form["client_secret"] != nil)
        }
    }

    @Test("Apple's answers map to Orchard's codes: invalid_grant, invalid_client, 500, 429, junk")
    func errorMapping() async throws {
        try await AppleIDStubServer.with { stub in
            stub.enqueue(
                .init(status: 400, body: #"{"error":"invalid_grant","error_description":"The code has already been used."}"#),
                .init(status: 400, body: #"{"error":"invalid_client"}"#),
                .init(status: 500, body: "oops"),
                .init(status: 429),
                .init(status: 200, body: "not json"),
                for: "/auth/token"
            )
            let client = stub.restClient(secrets: try secrets())
            let code = Redacted("c")
            let grant = await failure { () async throws(AppleIDError) in _ = try await client.exchangeCode(code, clientID: "app", redirectURI: nil) }
            #expect(grant?.code == .authorizationCodeRejected)
            #expect(grant?.appleErrorCode == .invalidGrant)
            let client1 = await failure { () async throws(AppleIDError) in
                _ = try await client.exchangeCode(code, clientID: "app", redirectURI: nil)
            }
            #expect(client1?.code == .appleClientRejected)
            #expect(client1?.appleErrorCode == .invalidClient)
            for _ in 0..<3 {
                let error = await failure { () async throws(AppleIDError) in
                    _ = try await client.exchangeCode(code, clientID: "app", redirectURI: nil)
                }
                #expect(error?.code == .appleUnavailable)
                #expect(error?.isTransient == true)
            }
        }
    }

    @Test("an answer slower than the deadline is apple_unavailable, and a revocation's own deadline wins")
    func timeouts() async throws {
        try await AppleIDStubServer.with { stub in
            // The stub is slower than the client's own timeout, so only the revocation's deadline can end it early;
            // the bound is loose because the machine may be loaded, never a measure of speed.
            stub.setDefault(.init(status: 200, delay: .seconds(8)), for: "/auth/revoke")
            let client = stub.restClient(secrets: try secrets(), timeout: .seconds(8))
            let started = ContinuousClock.now
            let error = await failure { () async throws(AppleIDError) in
                try await client.revoke(Redacted("t"), hint: .refreshToken, clientID: "app", deadline: .milliseconds(300))
            }
            #expect(error?.code == .appleUnavailable)
            #expect(ContinuousClock.now - started < .seconds(6))
            stub.setDefault(.init(status: 200, delay: .seconds(3)), for: "/auth/token")
            let slow = stub.restClient(secrets: try secrets(), timeout: .milliseconds(300))
            let tokenError = await failure { () async throws(AppleIDError) in
                _ = try await slow.validateRefreshToken(Redacted("r"), clientID: "app")
            }
            #expect(tokenError?.code == .appleUnavailable)
        }
    }

    @Test("Apple unreachable is apple_unavailable")
    func unreachable() async throws {
        let client = AppleIDStubServer.unreachableRESTClient(secrets: try secrets())
        let error = await failure { () async throws(AppleIDError) in try await client.revoke(Redacted("t"), hint: .accessToken, clientID: "app") }
        #expect(error?.code == .appleUnavailable)
    }

    @Test("the HTTP key source reads /auth/keys, and anything but a JWKS is an error")
    func keySource() async throws {
        let tokens = Shared.apple
        try await AppleIDStubServer.with { stub in
            stub.enqueue(
                .init(body: String(decoding: tokens.jwksJSON(), as: UTF8.self)),
                .init(status: 503),
                .init(status: 200, body: "[]"),
                for: "/auth/keys"
            )
            let source = stub.keySource()
            let keys = AppleKeySet(source: source, clock: TestWallClock(), logger: Shared.logger)
            _ = try await keys.key(for: tokens.kid)
            #expect(await keys.cachedKeyIDs == [tokens.kid])
            #expect(stub.received.first?.method == "GET")
            #expect(stub.received.first?.path == "/auth/keys")
            await #expect(throws: AppleIDError.self) { _ = try await source.fetchKeys() }
            await #expect(throws: AppleIDError.self) { _ = try await source.fetchKeys() }
        }
    }
}
