import AppleIDEmulator
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import SQLKit
import Storage

/// The demo's steps, each printed as it happens, all through Orchard's HTTP API.
struct DemoScript {
    let http: HTTPClient
    let orchard: String
    let emulator: AppleEmulator
    let clientID: String
    let database: SQLiteDatabaseClient

    func run() async throws {
        let user = emulator.makeUser(email: "ada@privaterelay.appleid.com", isPrivateEmail: true, firstName: "Ada", lastName: "Lovelace")

        step(1, "The app asks Orchard for a nonce")
        let nonce = try await call(.POST, "/v1/auth/apple/nonce", expect: 201)
        let rawNonce = try string(nonce, "nonce")
        show("POST /v1/auth/apple/nonce -> 201, expires_at \(try string(nonce, "expires_at"))")

        step(2, "Ada signs in with Apple on her phone (the emulator plays Apple); the app passes SHA-256(nonce)")
        let first = try emulator.authorize(user: user, clientID: clientID, nonce: sha256(rawNonce))
        show("identity token and one-time authorization code received")

        step(3, "The app hands them to Orchard: verified, nonce consumed, code exchanged at Apple, account created")
        let signIn = try await call(
            .POST,
            "/v1/auth/apple",
            json: [
                "identity_token": first.identityToken, "authorization_code": first.authorizationCode, "nonce": rawNonce,
                "user": ["name": ["first_name": "Ada", "last_name": "Lovelace"], "email": user.email ?? ""],
            ],
            expect: 200
        )
        let token = try string(signIn["session"] as? [String: Any] ?? [:], "token")
        let account = signIn["account"] as? [String: Any] ?? [:]
        show("POST /v1/auth/apple -> 200, is_new_account \(flag(signIn["is_new_account"]))")
        show("account \(account["id"] ?? "?"): email \(account["email"] ?? "-"), apple_credential \(account["apple_credential"] ?? "?")")

        step(4, "The app checks the session")
        let session = try await call(.GET, "/v1/session", bearer: token, expect: 200)
        show("GET /v1/session -> 200, expires_at \((session["session"] as? [String: Any])?["expires_at"] ?? "?")")

        step(5, "Ada signs in again on her laptop: same account, first name kept, new session")
        let secondNonce = try string(try await call(.POST, "/v1/auth/apple/nonce", expect: 201), "nonce")
        let second = try emulator.authorize(user: user, clientID: clientID, nonce: sha256(secondNonce))
        let again = try await call(
            .POST,
            "/v1/auth/apple",
            json: ["identity_token": second.identityToken, "authorization_code": second.authorizationCode, "nonce": secondNonce],
            expect: 200
        )
        let name = ((again["account"] as? [String: Any])?["name"] as? [String: Any])?["first_name"] ?? "-"
        show("POST /v1/auth/apple -> 200, is_new_account \(flag(again["is_new_account"])), first_name \(name)")

        step(6, "A replayed request is refused")
        let replay = try await call(
            .POST,
            "/v1/auth/apple",
            json: ["identity_token": second.identityToken, "authorization_code": second.authorizationCode, "nonce": secondNonce],
            expect: 401
        )
        show("POST /v1/auth/apple (replayed) -> 401 \(replay["code"] ?? "?")")

        step(7, "What the database holds for Ada: ciphertext and a keyed hash only")
        try await showStoredRow()

        step(8, "Ada signs out on her phone: that session ends, nothing is sent to Apple")
        _ = try await call(.DELETE, "/v1/session", bearer: token, expect: 204)
        let ended = try await call(.GET, "/v1/session", bearer: token, expect: 401)
        show("DELETE /v1/session -> 204; GET /v1/session -> 401 \(ended["code"] ?? "?") (\(ended["reason"] ?? "?"))")

        step(9, "Every call that reached Apple")
        for call in emulator.calls() {
            show("\(call.endpoint.path) grant_type=\(call.grantType ?? "-") -> \(call.status.map(String.init) ?? "-")")
        }
        Console.line()
        Console.line("Demo complete.")
    }

    private func showStoredRow() async throws {
        let rows = try await database.withDatabase { db in
            try await db.raw(
                "SELECT id, subject_hash, sealed_subject, sealed_email, sealed_name, sealed_refresh_token, apple_credential FROM accounts"
            ).all()
        }
        for row in rows {
            for column in ["id", "subject_hash", "sealed_subject", "sealed_email", "sealed_name", "sealed_refresh_token", "apple_credential"] {
                let value = (try? row.decode(column: column, as: String?.self)) ?? nil
                show("\(column.padding(toLength: 21, withPad: " ", startingAt: 0)) \(abbreviate(value ?? "NULL"))")
            }
        }
    }

    private func flag(_ value: Any?) -> String {
        (value as? Bool).map { $0 ? "true" : "false" } ?? "?"
    }

    private func abbreviate(_ value: String) -> String {
        value.count > 60 ? String(value.prefix(57)) + "..." : value
    }

    private func step(_ number: Int, _ text: String) {
        Console.line()
        Console.line("\(number). \(text)")
    }

    private func show(_ text: String) {
        Console.line("   \(text)")
    }

    private func sha256(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    private func string(_ object: [String: Any], _ key: String) throws -> String {
        guard let value = object[key] as? String else { throw DemoError("the answer has no \(key)") }
        return value
    }

    private func call(
        _ method: HTTPMethod,
        _ path: String,
        json: [String: Any]? = nil,
        bearer: String? = nil,
        expect: Int
    ) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: orchard + path)
        request.method = method
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(try JSONSerialization.data(withJSONObject: json))
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard Int(response.status.code) == expect else {
            throw DemoError("\(method.rawValue) \(path) answered \(response.status.code), expected \(expect): \(String(buffer: body))")
        }
        return (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] ?? [:]
    }
}

/// A demo step that did not go as scripted.
struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
