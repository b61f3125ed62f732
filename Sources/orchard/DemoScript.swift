import AppleID
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
    let webClientID: String
    let database: SQLiteDatabaseClient
    /// Orchard's and the emulator's clock, which the script moves a day ahead.
    let clock: DemoClock
    /// What the app-transfer act needs to start a second installation for the receiving team.
    let receivingSide: DemoReceivingSide

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

        try await secondHalf(user: user, laptopSession: try string(again["session"] as? [String: Any] ?? [:], "token"))

        try await webFlow()

        try await importAct()

        try await appTransfer()

        step(21, "Every call that reached Apple")
        for call in emulator.calls() {
            let hint = call.tokenTypeHint.map { " token_type_hint=\($0)" } ?? ""
            show("\(call.endpoint.path) grant_type=\(call.grantType ?? "-")\(hint) -> \(call.status.map(String.init) ?? "-")")
        }
        Console.line()
        Console.line("Demo complete.")
    }

    /// Notifications, deletion with revocation, deletion through an Apple outage, and the scan of the files.
    private func secondHalf(user: EmulatedUser, laptopSession: String) async throws {
        step(9, "Ada turns Hide My Email forwarding off: Apple notifies Orchard (email-disabled)")
        emulator.setNotifyURL(orchard + "/v1/apple/notifications")
        let status = try await emulator.sendNotification(
            type: "email-disabled",
            sub: user.sub,
            clientID: clientID,
            email: user.email,
            isPrivateEmail: true
        )
        show("POST /v1/apple/notifications -> \(status) (stored, then processed in the background)")
        let forwarding = try await waitFor("email_forwarding disabled") {
            let session = try await call(.GET, "/v1/session", bearer: laptopSession, expect: 200)
            return (session["account"] as? [String: Any])?["email_forwarding"] as? String == "disabled"
        }
        show("GET /v1/session -> email_forwarding \(forwarding ? "disabled" : "?")")

        step(10, "Ada deletes her account: data erased, her refresh token revoked at Apple")
        let deleted = try await call(.DELETE, "/v1/account", bearer: laptopSession, expect: 200)
        show("DELETE /v1/account -> 200, apple_revocation \(deleted["apple_revocation"] ?? "?")")
        let revoke = emulator.calls(to: .revoke).last
        show("Apple saw /auth/revoke with token_type_hint=\(revoke?.tokenTypeHint ?? "-") -> \(revoke?.status.map(String.init) ?? "-")")
        let after = try await call(.GET, "/v1/session", bearer: laptopSession, expect: 401)
        show("GET /v1/session -> 401 \(after["code"] ?? "?") (\(after["reason"] ?? "?"))")

        step(11, "Bob signs up, then deletes his account while Apple is down")
        let bob = emulator.makeUser(email: "bob@privaterelay.appleid.com", isPrivateEmail: true, firstName: "Bob", lastName: "Builder")
        let nonce = try string(try await call(.POST, "/v1/auth/apple/nonce", expect: 201), "nonce")
        let authorization = try emulator.authorize(user: bob, clientID: clientID, nonce: sha256(nonce))
        let signIn = try await call(
            .POST,
            "/v1/auth/apple",
            json: [
                "identity_token": authorization.identityToken, "authorization_code": authorization.authorizationCode, "nonce": nonce,
                "user": ["name": ["first_name": "Bob", "last_name": "Builder"]],
            ],
            expect: 200
        )
        let bobSession = try string(signIn["session"] as? [String: Any] ?? [:], "token")
        emulator.injectFailure(endpoint: .revoke, failure: .status(503), count: 2)
        let pending = try await call(.DELETE, "/v1/account", bearer: bobSession, expect: 200)
        show("Apple answers /auth/revoke with 503; DELETE /v1/account -> 200, apple_revocation \(pending["apple_revocation"] ?? "?")")
        show("Bob's data is already gone; his token waits, sealed, in the revocation outbox")

        step(12, "Apple recovers; the background worker retries with backoff until Apple accepts")
        let done = try await waitFor("the revocation to complete", timeout: 30) {
            emulator.calls(to: .revoke).contains { $0.status == 200 && $0.token != revoke?.token }
        }
        let tries = emulator.calls(to: .revoke).filter { $0.token != revoke?.token }.map { $0.status.map(String.init) ?? "-" }
        show(done ? "Bob's token revoked after tries answered \(tries.joined(separator: ", "))" : "still pending")

        try await revokedAtApple()
        try await workAndSchool()

        step(16, "Scan of every database file (main file and WAL) for anything of Ada or Bob")
        var secrets = [user.sub, bob.sub, "ada@privaterelay.appleid.com", "bob@privaterelay.appleid.com", "Lovelace", "Builder"]
        secrets += emulator.issuedTokens(sub: user.sub) + emulator.issuedTokens(sub: bob.sub)
        let directory = URL(fileURLWithPath: database.path).deletingLastPathComponent()
        var found = 0
        var scanned: [String] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() {
            let bytes = try Data(contentsOf: directory.appendingPathComponent(name))
            scanned.append("\(name) (\(bytes.count) bytes)")
            for secret in secrets
            where bytes.range(of: Data(secret.utf8)) != nil || bytes.range(of: Data(Data(secret.utf8).base64EncodedString().utf8)) != nil {
                found += 1
            }
        }
        show("scanned \(scanned.joined(separator: ", ")) for \(secrets.count) values (subjects, emails, names, tokens)")
        show(found == 0 ? "nothing found: both users are gone from the files" : "FOUND \(found) values")
        if found > 0 { throw DemoError("personal data left in the database files") }

        step(17, "What remains: audit records holding only a salted hash of each subject")
        let rows = try await database.withDatabase { db in
            try await db.raw("SELECT event, reason, subject_digest FROM audit_events ORDER BY occurred_at").all()
        }
        for row in rows {
            let event = (try? row.decode(column: "event", as: String.self)) ?? "?"
            let reason = (try? row.decode(column: "reason", as: String.self)) ?? "?"
            let digest = (try? row.decode(column: "subject_digest", as: String.self)) ?? "?"
            show("\(event) (\(reason)) subject sha256(salt:sub) = \(abbreviate(digest))")
        }
    }

    /// Polls `condition` every 100 ms for at most `timeout` seconds.
    func waitFor(_ what: String, timeout: Double = 15, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw DemoError("timed out waiting for \(what)")
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

    func flag(_ value: Any?) -> String {
        (value as? Bool).map { $0 ? "true" : "false" } ?? "?"
    }

    func abbreviate(_ value: String) -> String {
        value.count > 60 ? String(value.prefix(57)) + "..." : value
    }

    func step(_ number: Int, _ text: String) {
        Console.line()
        Console.line("\(number). \(text)")
    }

    func show(_ text: String) {
        Console.line("   \(text)")
    }

    func sha256(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).hexString
    }

    func string(_ object: [String: Any], _ key: String) throws -> String {
        guard let value = object[key] as? String else { throw DemoError("the answer has no \(key)") }
        return value
    }

    /// Calls Orchard (or the Orchard at `base`), and checks the status when `expect` is given.
    func call(
        _ method: HTTPMethod,
        _ path: String,
        json: [String: Any]? = nil,
        bearer: String? = nil,
        expect: Int?,
        at base: String? = nil
    ) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: (base ?? orchard) + path)
        request.method = method
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(try JSONSerialization.data(withJSONObject: json))
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        if let expect, Int(response.status.code) != expect {
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
