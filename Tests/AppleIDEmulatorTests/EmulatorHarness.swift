import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOHTTP1
import OrchardTesting

/// One running emulator for one test, with a test clock, a client key, and helpers that speak Apple's wire format.
struct EmulatorHarness: Sendable {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let appID = "com.example.app"
    static let webID = "com.example.web"
    static let redirectURI = "https://orchard.example.com/v1/auth/apple/callback"
    /// A second team, with a key of its own, for app transfers.
    static let teamB = "TEAMB12345"
    static let keyB = "KEYB123456"
    static let appB = "com.example.team-b"

    let clock: TestWallClock
    let emulator: AppleEmulator
    let server: RunningEmulator
    let clientKeyPEM: String
    /// Team B's private key.
    let teamBKeyPEM: String

    var baseURL: String { server.baseURL }

    /// Starts an emulator, runs `body`, and stops it whatever happens.
    static func with(
        timeoutHold: Duration = .seconds(5),
        notifyURL: String? = nil,
        _ body: (EmulatorHarness) async throws -> Void
    ) async throws {
        let clock = TestWallClock()
        let key = AppleEmulatorConfiguration.makeClientKey()
        let teamBKey = AppleEmulatorConfiguration.makeClientKey()
        var logger = Logger(label: "test.apple-emulator")
        logger.logLevel = .warning
        let emulator = try AppleEmulator(
            configuration: AppleEmulatorConfiguration(
                teamID: teamID,
                keyID: keyID,
                clientIDs: [appID, webID],
                clientPublicKeyPEM: key.publicKeyPEM,
                notifyURL: notifyURL,
                clock: clock,
                timeoutHold: timeoutHold,
                otherTeams: [EmulatorTeam(teamID: teamB, keyID: keyB, clientPublicKeyPEM: teamBKey.publicKeyPEM, clientIDs: [appB])]
            ),
            logger: logger
        )
        try await emulator.withRunningServer { server in
            try await body(
                EmulatorHarness(
                    clock: clock,
                    emulator: emulator,
                    server: server,
                    clientKeyPEM: key.privateKeyPEM,
                    teamBKeyPEM: teamBKey.privateKeyPEM
                )
            )
        }
    }

    // MARK: Client secrets, signed with jwt-kit as Orchard's client would

    struct SecretClaims: JWTPayload {
        var iss: IssuerClaim
        var sub: SubjectClaim
        var aud: AudienceClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// An ES256 client secret; every claim can be made wrong.
    func clientSecret(
        clientID: String = appID,
        iss: String = teamID,
        sub: String? = nil,
        aud: String = "https://appleid.apple.com",
        issuedAt: Date? = nil,
        lifetime: TimeInterval = 3600,
        kid: String = keyID,
        privateKeyPEM: String? = nil
    ) async throws -> String {
        let iat = issuedAt ?? clock.now()
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(pem: privateKeyPEM ?? clientKeyPEM), kid: JWKIdentifier(string: kid))
        let claims = SecretClaims(
            iss: IssuerClaim(value: iss),
            sub: SubjectClaim(value: sub ?? clientID),
            aud: AudienceClaim(value: [aud]),
            iat: IssuedAtClaim(value: iat),
            exp: ExpirationClaim(value: iat.addingTimeInterval(lifetime))
        )
        return try await keys.sign(claims, kid: JWKIdentifier(string: kid))
    }

    // MARK: Apple's endpoints

    /// `POST /auth/token` with `grant_type=authorization_code` and a valid secret.
    func exchange(code: String, clientID: String = appID, redirectURI: String? = nil) async throws -> Answer {
        var fields = [
            "client_id": clientID,
            "client_secret": try await clientSecret(clientID: clientID),
            "code": code,
            "grant_type": "authorization_code",
        ]
        fields["redirect_uri"] = redirectURI
        return try await postForm("/auth/token", fields)
    }

    /// `POST /auth/token` with `grant_type=refresh_token` and a valid secret.
    func refresh(_ refreshToken: String, clientID: String = appID) async throws -> Answer {
        try await postForm(
            "/auth/token",
            [
                "client_id": clientID,
                "client_secret": try await clientSecret(clientID: clientID),
                "refresh_token": refreshToken,
                "grant_type": "refresh_token",
            ]
        )
    }

    /// `POST /auth/revoke` with a valid secret.
    func revoke(_ token: String, hint: String = "refresh_token", clientID: String = appID) async throws -> Answer {
        try await postForm(
            "/auth/revoke",
            [
                "client_id": clientID,
                "client_secret": try await clientSecret(clientID: clientID),
                "token": token,
                "token_type_hint": hint,
            ]
        )
    }

    /// Authorizes a fresh user and exchanges the code; returns the token response.
    func signIn(clientID: String = appID) async throws -> (user: EmulatedUser, tokens: Answer) {
        let user = emulator.makeUser()
        let authorization = try emulator.authorize(user: user, clientID: clientID)
        return (user, try await exchange(code: authorization.authorizationCode, clientID: clientID))
    }

    // MARK: HTTP

    /// An answer as the tests look at it.
    struct Answer: Sendable {
        let status: Int
        let headers: [String: String]
        let body: Data

        var json: [String: Any] {
            ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:]
        }

        subscript(_ key: String) -> String? { json[key] as? String }

        var error: String? { self["error"] }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    func postForm(
        _ path: String,
        _ fields: [String: String],
        bearer: String? = nil,
        timeout: TimeAmount = .seconds(10)
    ) async throws -> Answer {
        let form = fields.sorted { $0.key < $1.key }.map { "\(Self.formEncode($0.key))=\(Self.formEncode($0.value))" }
        return try await send(
            .POST,
            path,
            body: Data(form.joined(separator: "&").utf8),
            contentType: "application/x-www-form-urlencoded",
            headers: bearer.map { [("Authorization", "Bearer \($0)")] } ?? [],
            timeout: timeout
        )
    }

    func postJSON(_ path: String, _ object: [String: any Sendable]) async throws -> Answer {
        try await send(.POST, path, body: try JSONSerialization.data(withJSONObject: object), contentType: "application/json")
    }

    func send(
        _ method: HTTPMethod,
        _ path: String,
        body: Data? = nil,
        contentType: String? = nil,
        headers extra: [(String, String)] = [],
        timeout: TimeAmount = .seconds(10)
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        if let contentType {
            request.headers.add(name: "Content-Type", value: contentType)
        }
        if let body {
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 1 << 20)
        var headers: [String: String] = [:]
        for header in response.headers {
            headers[header.name.lowercased()] = header.value
        }
        return Answer(status: Int(response.status.code), headers: headers, body: Data(bytes.readableBytesView))
    }

    static func formEncode(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    // MARK: JWS

    /// The header and payload of a compact JWS, as JSON objects (no signature check).
    static func decode(_ jws: String) throws -> (header: [String: Any], payload: [String: Any]) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3,
            let headerData = AppleIDTestClientKey.base64URLDecoded(parts[0]),
            let payloadData = AppleIDTestClientKey.base64URLDecoded(parts[1]),
            let header = try JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let payload = try JSONSerialization.jsonObject(with: payloadData) as? [String: Any]
        else {
            throw EmulatorTestError("not a compact JWS: \(jws)")
        }
        return (header, payload)
    }

    /// The served JWKS as a jwt-kit key collection.
    func servedKeys() async throws -> JWTKeyCollection {
        let answer = try await send(.GET, "/auth/keys")
        return try await JWTKeyCollection().add(jwksJSON: answer.text)
    }
}

/// A test step that did not go as expected.
struct EmulatorTestError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
