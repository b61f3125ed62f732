import Accounts
import AppleID
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import SQLKit
import Storage
import Testing

@Suite("Apple's server-to-server notifications through the HTTP API")
struct NotificationTests {
    static func account(_ h: OrchardHarness, _ token: String) async throws -> [String: Any] {
        try #require(try await h.request(.GET, "/v1/session", bearer: token).json["account"] as? [String: Any])
    }

    @Test("email-disabled then email-enabled set email_forwarding, each with one webhook, sessions untouched")
    func emailForwarding() async throws {
        try await OrchardHarness.withWebhooks { h, receiver in
            let user = h.emulator.makeUser()
            let token = try await h.signUp(user)
            let disabled = try h.emulator.signNotification(
                type: "email-disabled",
                sub: user.sub,
                clientID: OrchardHarness.clientID,
                email: user.email,
                isPrivateEmail: true
            )
            let response = try await h.postNotification(disabled)
            #expect(response.status == 200)
            let jti = try #require(disabled.jwsClaims["jti"] as? String)
            #expect(await h.processed(jti))
            #expect(try await Self.account(h, token)["email_forwarding"] as? String == "disabled")
            #expect(await eventually { receiver.delivered.count == 1 })
            let hook = try #require(receiver.delivered.first)
            #expect(hook.json["type"] as? String == "account.email_forwarding_changed")
            #expect(hook.json["email_forwarding"] as? String == "disabled")

            let enabled = try h.emulator.signNotification(type: "email-enabled", sub: user.sub, clientID: OrchardHarness.clientID)
            #expect(try await h.postNotification(enabled).status == 200)
            #expect(await eventually { (try? await Self.account(h, token)["email_forwarding"] as? String) == "enabled" })
            #expect(await eventually { receiver.delivered.count == 2 })
        }
    }

    @Test("consent-revoked under sign-out: every session ends with apple_credential_revoked, the account stays, Apple is not called")
    func consentRevokedSignOut() async throws {
        try await OrchardHarness.withWebhooks(policy: .signOut) { h, receiver in
            let user = h.emulator.makeUser()
            let token = try await h.signUp(user)
            let second = try await h.signUp(user)
            h.emulator.clearCalls()
            let payload = try h.emulator.signNotification(type: "consent-revoked", sub: user.sub, clientID: OrchardHarness.clientID)
            #expect(try await h.postNotification(payload).status == 200)
            #expect(await h.processed(try #require(payload.jwsClaims["jti"] as? String)))
            for session in [token, second] {
                let response = try await h.request(.GET, "/v1/session", bearer: session)
                #expect(response.code == "session_revoked")
                #expect(response["reason"] == "apple_credential_revoked")
            }
            let accounts = try await h.accounts.listAccounts()
            #expect(accounts.count == 1)
            #expect(accounts.first?.appleCredential == .revoked)
            #expect(h.emulator.calls(to: .revoke).isEmpty)
            #expect(await eventually { receiver.delivered.count == 1 })
            #expect(receiver.delivered.first?.json["type"] as? String == "account.credential_revoked")
            #expect(receiver.delivered.first?.json["reason"] as? String == "consent_revoked")
        }
    }

    @Test("a late notification, older than the account it names (the user signed up again), is recorded and not acted on")
    func latePredatesAccount() async throws {
        try await OrchardHarness.withWebhooks(policy: .delete) { h, receiver in
            let user = h.emulator.makeUser()
            let token = try await h.signUp(user)
            let jti = "late-\(UUID().uuidString)"
            let payload = try h.emulator.signNotification(
                type: "account-delete",
                sub: user.sub,
                clientID: OrchardHarness.clientID,
                jti: jti,
                eventTime: h.clock.now().addingTimeInterval(-(h.configuration.lifecycle.clockLeeway.seconds + 5))
            )
            #expect(try await h.postNotification(payload).status == 200)
            #expect(await h.processed(jti))
            #expect(try await h.inboxRow(jti)?.outcome == "predates_account")
            #expect(try await h.request(.GET, "/v1/session", bearer: token).status == 200, "the new account was touched")
            #expect(try await h.accounts.listAccounts().count == 1)
            #expect(receiver.delivered.isEmpty)

            // The same event within the leeway is acted on.
            let onTime = try h.emulator.signNotification(
                type: "account-delete",
                sub: user.sub,
                clientID: OrchardHarness.clientID,
                eventTime: h.clock.now().addingTimeInterval(-(h.configuration.lifecycle.clockLeeway.seconds - 5))
            )
            #expect(try await h.postNotification(onTime).status == 200)
            #expect(await eventually { (try? await h.accounts.listAccounts())?.isEmpty == true })
        }
    }

    @Test("consent-revoked under delete: the account is deleted, only account.deleted is sent, Apple is not called")
    func consentRevokedDelete() async throws {
        try await OrchardHarness.withWebhooks(policy: .delete, jobs: .byTest) { h, receiver in
            let user = h.emulator.makeUser()
            let token = try await h.signUp(user)
            let payload = try h.emulator.signNotification(type: "consent-revoked", sub: user.sub, clientID: OrchardHarness.clientID)
            #expect(try await h.postNotification(payload).status == 200)
            let pass = await h.runJobs()
            #expect(pass[.notifications] == 1 && pass[.webhooks] == 1)
            #expect(try await h.accounts.listAccounts().isEmpty)
            #expect(try await h.request(.GET, "/v1/session", bearer: token)["reason"] == "account_deleted")
            #expect(h.emulator.calls(to: .revoke).isEmpty)
            #expect(await h.runJobs().values.allSatisfy { $0 == 0 }, "nothing more to do")
            #expect(receiver.delivered.map { $0.json["type"] as? String } == ["account.deleted"])
            #expect(receiver.delivered.first?.json["reason"] as? String == "consent_revoked")
        }
    }

    @Test(
        "account-delete and account-deleted both delete the account with reason apple_account_deleted",
        arguments: ["account-delete", "account-deleted"]
    )
    func accountDelete(_ type: String) async throws {
        try await OrchardHarness.withWebhooks { h, receiver in
            let user = h.emulator.makeUser()
            _ = try await h.signUp(user)
            let payload = try h.emulator.signNotification(type: type, sub: user.sub, clientID: OrchardHarness.clientID)
            #expect(try await h.postNotification(payload).status == 200)
            #expect(await eventually { (try? await h.accounts.listAccounts())?.isEmpty == true })
            #expect(await eventually { receiver.delivered.count == 1 })
            #expect(receiver.delivered.first?.json["reason"] as? String == "apple_account_deleted")
            #expect(h.emulator.calls(to: .revoke).isEmpty)
        }
    }

    @Test("the same notification three times: one effect, one webhook")
    func duplicates() async throws {
        try await OrchardHarness.withWebhooks(jobs: .byTest) { h, receiver in
            let user = h.emulator.makeUser()
            _ = try await h.signUp(user)
            let payload = try h.emulator.signNotification(type: "email-disabled", sub: user.sub, clientID: OrchardHarness.clientID)
            for _ in 0..<3 { #expect(try await h.postNotification(payload).status == 200) }
            #expect(await h.runJobs()[.notifications] == 1)
            #expect(await h.processed(try #require(payload.jwsClaims["jti"] as? String)))
            #expect(receiver.delivered.count == 1)
            #expect(try await h.postNotification(payload).status == 200)
            #expect(await h.runJobs().values.allSatisfy { $0 == 0 }, "a duplicate is not acted on again")
            #expect(receiver.attempts.count == 1)
            #expect(h.counted("orchard_notifications_total", [("outcome", "stored")]) == 1)
            #expect(h.counted("orchard_notifications_total", [("outcome", "duplicate")]) == 3)
            #expect(h.counted("orchard_notifications_processed_total", [("type", "email-disabled")]) == 1)
            #expect(h.counted("orchard_webhooks_total", [("outcome", "delivered")]) == 1)
            #expect(try await h.database.count("SELECT COUNT(*) AS n FROM notification_inbox") == 1)
        }
    }

    @Test("a notification for an unknown or deleted subject is answered 200 and leaves only the inbox record")
    func unknownSubject() async throws {
        try await OrchardHarness.withWebhooks(jobs: .byTest) { h, receiver in
            let user = h.emulator.makeUser(email: "someone.deleted@example.com")
            let token = try await h.signUp(user)
            #expect(try await h.request(.DELETE, "/v1/account", bearer: token)["apple_revocation"] == "revoked")
            let payload = try h.emulator.signNotification(type: "consent-revoked", sub: user.sub, clientID: OrchardHarness.clientID)
            #expect(try await h.postNotification(payload).status == 200)
            let jti = try #require(payload.jwsClaims["jti"] as? String)
            let pass = await h.runJobs()
            #expect(pass[.notifications] == 1)
            #expect(pass[.webhooks] == 1, "the deletion's webhook only")
            let row = try #require(try await h.inboxRow(jti))
            #expect(row.sealed == nil)
            #expect(row.outcome == "unknown_subject")
            #expect(await h.runJobs().values.allSatisfy { $0 == 0 })
            #expect(receiver.attempts.count == 1)
            for file in try await h.databaseBytes() {
                for secret in [user.sub, "someone.deleted@example.com"] {
                    #expect(file.bytes.range(of: Data(secret.utf8)) == nil, "the deleted subject is in \(file.name)")
                }
            }
        }
    }

    @Test("an unknown type is answered 200 and recorded")
    func unknownType() async throws {
        try await OrchardHarness.withWebhooks { h, receiver in
            let user = h.emulator.makeUser()
            _ = try await h.signUp(user)
            let payload = try h.emulator.signNotification(type: "something-new", sub: user.sub, clientID: OrchardHarness.clientID)
            #expect(try await h.postNotification(payload).status == 200)
            let jti = try #require(payload.jwsClaims["jti"] as? String)
            #expect(await h.processed(jti))
            #expect(try await h.inboxRow(jti)?.outcome == "unknown_type")
            #expect(receiver.attempts.isEmpty)
        }
    }

    @Test("forged, foreign-audience, expired and malformed notifications are 400 notification_invalid with nothing stored")
    func invalid() async throws {
        try await OrchardHarness.withWebhooks { h, receiver in
            let user = h.emulator.makeUser()
            let token = try await h.signUp(user)
            let good = try h.emulator.signNotification(type: "consent-revoked", sub: user.sub, clientID: OrchardHarness.clientID)
            var parts = good.split(separator: ".").map(String.init)
            parts[2] = String(parts[2].reversed())
            let forged = parts.joined(separator: ".")
            let foreign = try h.emulator.signNotification(type: "consent-revoked", sub: user.sub, clientID: "com.example.not-ours")
            let expired = try h.emulator.signNotification(type: "consent-revoked", sub: user.sub, clientID: OrchardHarness.clientID)
            h.clock.advance(by: 86_400 + 120)
            for payload in [forged, foreign, expired, "not-a-jws"] {
                let response = try await h.postNotification(payload)
                #expect(response.status == 400)
                #expect(response.code == "notification_invalid")
            }
            let malformed = try await h.request(.POST, "/v1/apple/notifications", body: Data("{\"payload\": 5".utf8))
            #expect(malformed.code == "notification_invalid")
            #expect(try await h.request(.POST, "/v1/apple/notifications", json: ["other": "x"]).code == "notification_invalid")
            #expect(try await h.database.count("SELECT COUNT(*) AS n FROM notification_inbox") == 0)
            #expect(h.counted("orchard_notifications_total", [("outcome", "invalid")]) == 4)
            #expect(h.counted("orchard_notifications_total", [("outcome", "stored")]) == 0)
            h.clock.advance(by: -(86_400 + 120))
            #expect(try await h.request(.GET, "/v1/session", bearer: token).status == 200)
            #expect(receiver.attempts.isEmpty)
        }
    }
}

extension String {
    /// The claims of a JWS, decoded without verification (tests only).
    var jwsClaims: [String: Any] {
        let parts = split(separator: ".")
        guard parts.count == 3 else { return [:] }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }
}
