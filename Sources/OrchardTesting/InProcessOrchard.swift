public import Accounts
import AppleID
public import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
public import MetricsTestKit
import NIOCore
public import NIOHTTP1
public import OrchardServer
import Prometheus

/// The fast tier: Orchard's public routes in process (HummingbirdTesting's router mode), over the in-memory store, a
/// scripted Apple and a test clock. No socket, no database, no emulator: what a route decides (its policy, the request
/// it refuses, the problem it answers, what it leaves in the store) in milliseconds. The router is `serve`'s own
/// (``OrchardServer/buildRouter(lifecycle:configuration:parts:)``); what needs a socket or a real database (client
/// addresses, rate limits per address, slow clients, coherence between replicas) stays with ``OrchardHarness`` and
/// ``ServeProcess``.
public struct InProcessOrchard: Sendable {
    /// The client id configured.
    public static let clientID = OrchardHarness.clientID

    /// Everything the lifecycle stored.
    public let store: InMemoryStore
    /// Apple, as the test scripts it.
    public let apple: ScriptedAppleGateway
    /// The clock the lifecycle and the routes share.
    public let clock: TestWallClock
    /// The lifecycle the routes call.
    public let lifecycle: Lifecycle
    /// The settings the routes were built with.
    public let configuration: OrchardConfiguration
    /// Every metric the routes and the lifecycle recorded.
    public let metrics: TestMetrics
    private let client: any TestClientProtocol

    /// Builds the router over a fresh in-memory store and runs `body` against it.
    public static func with(
        configure: (inout OrchardConfiguration) -> Void = { _ in },
        _ body: @Sendable (InProcessOrchard) async throws -> Void
    ) async throws {
        var settings = OrchardConfiguration()
        settings.apple.teamID = "TEAMID1234"
        settings.apple.keyID = "KEYID12345"
        settings.apple.clientIDs = [clientID, OrchardHarness.webClientID]
        settings.vaultKeys = [VaultKey.generate(id: "fast1")]
        configure(&settings)
        let configuration = settings
        let store = InMemoryStore()
        let apple = ScriptedAppleGateway()
        let clock = TestWallClock(Date())
        let metrics = TestMetrics()
        let lifecycle = Lifecycle(
            store: store,
            vault: TokenVault(keys: configuration.vaultKeys),
            apple: apple,
            clock: clock,
            configuration: configuration.accounts,
            metrics: metrics
        )
        let logger = Logger(label: "orchard.fast") { _ in SwiftLogNoOpLogHandler() }
        let router = buildRouter(
            lifecycle: lifecycle,
            configuration: configuration,
            parts: RouterParts(
                clock: clock,
                random: SystemRandomSource(),
                registry: PrometheusCollectorRegistry(),
                metrics: metrics,
                logger: logger
            )
        )
        let application = Application(router: router, logger: logger)
        try await application.test(.router) { client in
            try await body(
                InProcessOrchard(
                    store: store,
                    apple: apple,
                    clock: clock,
                    lifecycle: lifecycle,
                    configuration: configuration,
                    metrics: metrics,
                    client: client
                )
            )
        }
    }

    /// Sends one request through the router.
    public func request(
        _ method: HTTPMethod,
        _ path: String,
        json: [String: any Sendable]? = nil,
        body: Data? = nil,
        headers: [(String, String)] = [],
        bearer: String? = nil
    ) async throws -> TestResponse {
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let name = HTTPField.Name(name) else { throw HarnessError("not a header name: \(name)") }
            fields.append(HTTPField(name: name, value: value))
        }
        if let bearer { fields[.authorization] = "Bearer \(bearer)" }
        var bytes = body
        if let json {
            fields[.contentType] = "application/json"
            bytes = try JSONSerialization.data(withJSONObject: json)
        }
        let answer = try await client.executeRequest(
            uri: path,
            method: HTTPRequest.Method(rawValue: method.rawValue) ?? .get,
            headers: fields,
            body: bytes.map { ByteBuffer(bytes: $0) }
        )
        return TestResponse(
            status: answer.status.code,
            headers: answer.headers.map { ($0.name.rawName, $0.value) },
            body: Data(answer.body.readableBytesView)
        )
    }

    /// A sign-in as an app makes it: a nonce from `POST /v1/auth/apple/nonce`, an identity token Apple (scripted)
    /// vouches for, `POST /v1/auth/apple`.
    public func signIn(sub: String, device: String? = nil, email: String? = nil) async throws -> TestResponse {
        let nonce = try await request(.POST, "/v1/auth/apple/nonce")
        guard nonce.status == 201, let raw = nonce["nonce"] else { throw HarnessError("the nonce route answered \(nonce.status)") }
        var body: [String: any Sendable] = [
            "identity_token": apple.identityToken(sub: sub, nonce: raw, audience: Self.clientID, email: email),
            "authorization_code": "code-\(UUID().uuidString)",
            "nonce": raw,
        ]
        if let device { body["device"] = device }
        return try await request(.POST, "/v1/auth/apple", json: body)
    }

    /// Signs `sub` in and returns the session token.
    ///
    /// - Throws: ``HarnessError`` when the sign-in is not answered 200.
    public func signUp(_ sub: String, device: String? = nil) async throws -> String {
        let response = try await signIn(sub: sub, device: device)
        guard response.status == 200, let token = (response.json["session"] as? [String: Any])?["token"] as? String else {
            throw HarnessError("the sign-in answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
        return token
    }
}
