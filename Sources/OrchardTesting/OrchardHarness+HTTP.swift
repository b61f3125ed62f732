import AppleID
public import AppleIDEmulator
public import AsyncHTTPClient
import Crypto
public import Foundation
import NIOCore
public import NIOHTTP1
import Storage

/// An answer as a test looks at it.
public struct TestResponse: Sendable {
    /// The status code.
    public let status: Int
    /// The headers.
    public let headers: [(String, String)]
    /// The raw body.
    public let body: Data

    /// The first header with this name (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// Every header with this name (case-insensitive), in order.
    public func headers(named name: String) -> [String] {
        headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1)
    }

    /// Whether the answer sets a cookie `name` to a value (rather than clearing it).
    public func setsCookie(_ name: String) -> Bool {
        headers(named: "Set-Cookie").contains { $0.hasPrefix("\(name)=") && !$0.hasPrefix("\(name)=;") }
    }

    /// Whether the answer clears the cookie `name` (`Max-Age=0`).
    public func clearsCookie(_ name: String) -> Bool {
        headers(named: "Set-Cookie").contains { $0.hasPrefix("\(name)=;") && $0.contains("Max-Age=0") }
    }

    /// The body as a JSON object (empty when it is not one).
    public var json: [String: Any] {
        ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:]
    }

    /// A string member of the JSON body.
    public subscript(_ key: String) -> String? { json[key] as? String }

    /// The problem's `code`.
    public var code: String? { self["code"] }
}

/// How the app hands the nonce to Apple.
public enum NonceMode: Sendable {
    /// Its SHA-256 (native apps).
    case hashed
    /// As issued (the web flow).
    case raw
}

/// Talks to one Orchard over HTTP as an app would, signing users in through an emulator.
public struct OrchardClient: TalksToOrchard {
    /// Orchard's base URL.
    public let baseURL: String
    /// The HTTP client.
    public let http: HTTPClient
    /// The emulator that plays Apple.
    public let emulator: AppleEmulator

    /// Creates a client.
    public init(baseURL: String, http: HTTPClient, emulator: AppleEmulator) {
        self.baseURL = baseURL
        self.http = http
        self.emulator = emulator
    }
}

/// Whatever talks to one Orchard over HTTP as an app would, signing users in through an emulator: an
/// ``OrchardClient``, or an ``OrchardHarness`` for its own Orchard.
public protocol TalksToOrchard: Sendable {
    /// Orchard's base URL.
    var baseURL: String { get }
    /// The HTTP client.
    var http: HTTPClient { get }
    /// The emulator that plays Apple.
    var emulator: AppleEmulator { get }
}

extension TalksToOrchard {
    /// Sends a request to Orchard (or any URL when `path` is absolute).
    public func request(
        _ method: HTTPMethod,
        _ path: String,
        json: [String: any Sendable]? = nil,
        body: Data? = nil,
        headers: [(String, String)] = [],
        bearer: String? = nil
    ) async throws -> TestResponse {
        var request = HTTPClientRequest(url: path.hasPrefix("http") ? path : baseURL + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(try JSONSerialization.data(withJSONObject: json))
        } else if let body {
            request.body = .bytes(body)
        }
        let response = try await http.execute(request, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 16 * 1024 * 1024)
        return TestResponse(
            status: Int(response.status.code),
            headers: response.headers.map { ($0.name, $0.value) },
            body: Data(bytes.readableBytesView)
        )
    }

    /// Asks Orchard for a nonce.
    public func issueNonce() async throws -> String {
        let response = try await request(.POST, "/v1/auth/apple/nonce")
        guard response.status == 201, let nonce = response["nonce"] else {
            throw HarnessError("POST /v1/auth/apple/nonce answered \(response.status)")
        }
        return nonce
    }

    /// SHA-256 of a nonce, lowercase hex, as a native app passes it to Apple.
    public static func hashNonce(_ raw: String) -> String {
        SHA256.hash(data: Data(raw.utf8)).hexString
    }

    /// The whole native sign-in: a nonce from Orchard, an authorization from the emulator, `POST /v1/auth/apple`.
    public func signIn(
        _ user: EmulatedUser,
        nonceMode: NonceMode = .hashed,
        clientID: String = OrchardHarness.clientID,
        userDetails: [String: any Sendable]? = nil,
        device: String? = nil
    ) async throws -> (response: TestResponse, authorization: EmulatedAuthorization, nonce: String) {
        let nonce = try await issueNonce()
        let authorization = try emulator.authorize(
            user: user,
            clientID: clientID,
            nonce: nonceMode == .hashed ? Self.hashNonce(nonce) : nonce
        )
        var body: [String: any Sendable] = [
            "identity_token": authorization.identityToken,
            "authorization_code": authorization.authorizationCode,
            "nonce": nonce,
        ]
        if let userDetails { body["user"] = userDetails }
        if let device { body["device"] = device }
        return (try await request(.POST, "/v1/auth/apple", json: body), authorization, nonce)
    }

    /// Signs `user` in (with the first authorization's `name`, if any) and returns the session token.
    ///
    /// - Throws: ``HarnessError`` when the sign-in is not answered 200.
    public func signUp(_ user: EmulatedUser, name: [String: String]? = nil, device: String? = nil) async throws -> String {
        let response = try await signIn(user, userDetails: name.map { ["name": $0] }, device: device).response
        guard response.status == 200, let token = (response.json["session"] as? [String: Any])?["token"] as? String else {
            throw HarnessError("the sign-in answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
        return token
    }
}

extension OrchardHarness: TalksToOrchard {
    /// The HTTP client for this harness's Orchard.
    public var client: OrchardClient { OrchardClient(baseURL: baseURL, http: http, emulator: emulator) }

    /// How many rows `table` holds (a table name, optionally followed by a `WHERE` clause).
    public func rowCount(_ table: String) async throws -> Int {
        try await database.count("SELECT COUNT(*) AS n FROM \(table)")
    }

    /// Every database file's bytes, after the WAL was checkpointed into the main file.
    public func databaseBytes() async throws -> [(name: String, bytes: Data)] {
        try await testDatabase.files()
    }
}

/// A harness step that did not go as a test expects.
public struct HarnessError: Error, CustomStringConvertible {
    /// What happened.
    public let description: String
    init(_ description: String) { self.description = description }
}
