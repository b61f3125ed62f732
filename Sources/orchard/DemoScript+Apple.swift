import AppleID
import AppleIDEmulator
import Foundation
import NIOHTTP1
import SQLKit
import Storage

/// The demo's users whom Apple's side changes: Carol, whose grant Apple ends, and Dana, a student with a Managed Apple
/// Account.
extension DemoScript {
    /// Carol stops using Sign in with Apple with the app; Orchard learns it at her next daily validation.
    func revokedAtApple() async throws {
        step(13, "Carol signs up, then stops using Sign in with Apple with this app in her Apple ID settings")
        let carol = emulator.makeUser(email: "carol@example.com", isPrivateEmail: false, firstName: "Carol", lastName: "Shaw")
        let signedIn = try await signIn(carol)
        let session = signedIn.session
        let accountID = try string(signedIn.account, "id")
        show("POST /v1/auth/apple -> 200, a session for Carol")
        show("Apple ends her grant (Settings > Apple ID > Sign in with Apple > Stop Using): \(emulator.revokeGrant(sub: carol.sub)) grant ended")
        _ = try await call(.GET, "/v1/session", bearer: session, expect: 200)
        show("GET /v1/session -> 200: Apple does not tell Orchard, and her session still works")

        step(14, "A day later Orchard validates her refresh token, as it does once a day, and signs her out everywhere")
        clock.advance(by: 25 * 3600 + 60)
        show("the demo's clock moves 25 hours ahead (validation is due a day after sign-in, plus up to an hour of jitter)")
        var ended: [String: Any] = [:]
        _ = try await waitFor("the session to end") {
            ended = try await call(.GET, "/v1/session", bearer: session, expect: nil)
            return ended["code"] as? String == "session_revoked"
        }
        let validation = emulator.calls(to: .token).last { $0.grantType == "refresh_token" }
        show("Apple answered /auth/token grant_type=refresh_token -> \(validation?.status.map(String.init) ?? "-") \(validation?.error ?? "")")
        show("GET /v1/session -> 401 \(ended["code"] ?? "?") (\(ended["reason"] ?? "?"))")
        let credential = try await database.withDatabase { db in
            try await db.raw("SELECT apple_credential FROM accounts WHERE id = \(bind: accountID)").first()?
                .decode(column: "apple_credential", as: String.self)
        }
        show("her account is kept, with apple_credential \(credential ?? "?"); nothing was sent to /auth/revoke")

        let history = try await database.withDatabase { db in
            try await db.raw(
                "SELECT type, reason FROM account_events WHERE account_id = \(bind: accountID) ORDER BY occurred_at DESC, id DESC"
            ).all()
        }
        show("why she was signed out: her history (orchard accounts history, or GET /v1/account/events once she is back), newest first:")
        for event in history {
            let reason = try event.decode(column: "reason", as: String?.self).map { " (\($0))" } ?? ""
            show("  \(try event.decode(column: "type", as: String.self))\(reason)")
        }
    }

    /// A Work & School user: a Managed Apple Account whose token carries `org_id` and an empty, unverified email.
    func workAndSchool() async throws {
        step(15, "Dana, a student, signs in with her school's Managed Apple Account: org_id, and no email")
        let dana = emulator.makeUser(
            email: "",
            isPrivateEmail: false,
            emailVerified: false,
            firstName: "Dana",
            lastName: "Ng",
            orgID: "org_demo_school"
        )
        // Through the web client id: the app transfer below moves the app's own users only.
        let signedIn = try await signIn(dana, clientID: webClientID)
        let account = signedIn.account
        show(
            "POST /v1/auth/apple -> 200: org_id \(account["org_id"] ?? "-"), email \(account["email"] ?? "(none)"), email_verified \(flag(account["email_verified"]))"
        )
        let token = try string(try await call(.POST, "/v1/session/token", bearer: signedIn.session, expect: 200), "access_token")
        let claims = token.split(separator: ".").dropFirst().first.flatMap { Base64URL.decode($0.utf8) }
            .flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
        show("her access token for the app's other backends carries org_id \(claims?["org_id"] ?? "-")")
    }

    /// A sign-in from the app for `user`: the session token and ACCOUNT.
    func signIn(_ user: EmulatedUser, clientID: String? = nil) async throws -> (session: String, account: [String: Any]) {
        let nonce = try string(try await call(.POST, "/v1/auth/apple/nonce", expect: 201), "nonce")
        let authorization = try emulator.authorize(user: user, clientID: clientID ?? self.clientID, nonce: sha256(nonce))
        let answer = try await call(
            .POST,
            "/v1/auth/apple",
            json: ["identity_token": authorization.identityToken, "authorization_code": authorization.authorizationCode, "nonce": nonce],
            expect: 200
        )
        return (try string(answer["session"] as? [String: Any] ?? [:], "token"), answer["account"] as? [String: Any] ?? [:])
    }
}
