import Accounts
import AppleIDEmulator
import Crypto
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import SQLKit
import Storage
import Testing

@Suite("Webhooks to the app's other backends")
struct WebhookTests {
    /// Runs the reference Standard Webhooks library over a received attempt: `nil` when it is not installed.
    static func referenceVerifies(_ attempt: WebhookReceiver.Attempt, secret: String) throws -> Bool? {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("attempt.json")
        let object: [String: Any] = ["secret": secret, "headers": attempt.headers, "body": attempt.body]
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: file))
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/verify_webhook.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, file]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ChildProcess.start(process)
        process.waitUntilExit()
        switch process.terminationStatus {
        case 0: return true
        case 3: return nil
        default: return false
        }
    }

    /// The signature as the Standard Webhooks specification defines it, computed here independently.
    static func expectedSignature(_ attempt: WebhookReceiver.Attempt, secret: String) -> String {
        let key = SymmetricKey(data: Data(base64Encoded: String(secret.dropFirst("whsec_".count)))!)
        let signed = "\(attempt.headers["webhook-id"] ?? "").\(attempt.headers["webhook-timestamp"] ?? "").\(attempt.body)"
        return "v1," + Data(HMAC<SHA256>.authenticationCode(for: Data(signed.utf8), using: key)).base64EncodedString()
    }

    @Test("a deletion's webhook is signed as Standard Webhooks specifies and carries no Apple subject, email or token")
    func signedAndClean() async throws {
        try await OrchardHarness.withWebhooks { h, receiver in
            let user = h.emulator.makeUser(email: "hook.user@example.com")
            let token = try await h.signUp(user)
            let accountID = try #require(try await h.accounts.listAccounts().first?.id)
            #expect(try await h.request(.DELETE, "/v1/account", bearer: token).status == 200)
            #expect(await eventually { receiver.delivered.count == 1 })
            let attempt = try #require(receiver.delivered.first)
            #expect(attempt.json["type"] as? String == "account.deleted")
            #expect(attempt.json["account_id"] as? String == accountID)
            #expect(attempt.json["reason"] as? String == "user_request")
            #expect((attempt.json["id"] as? String) == attempt.headers["webhook-id"])
            #expect(attempt.json["occurred_at"] is String)
            #expect(attempt.headers["webhook-signature"] == Self.expectedSignature(attempt, secret: OrchardHarness.webhookSecret))
            let timestamp = Int(attempt.headers["webhook-timestamp"] ?? "") ?? 0
            #expect(abs(Double(timestamp) - h.clock.now().timeIntervalSince1970) < 5)
            for secret in [user.sub, "hook.user@example.com"] + h.emulator.issuedTokens(sub: user.sub) {
                #expect(!attempt.body.contains(secret))
                #expect(!attempt.headers.values.contains { $0.contains(secret) })
            }
            switch try await offThePool({ try Self.referenceVerifies(attempt, secret: OrchardHarness.webhookSecret) }) {
            case .some(let verified):
                #expect(verified, "the standardwebhooks library refused Orchard's signature")
            case .none:
                let message = "the Python package standardwebhooks is not installed: the reference check was skipped"
                if ProcessInfo.processInfo.environment["CI"] == "true" {
                    Issue.record("\(message) (scripts/ci-setup installs it)")
                } else {
                    print("WARNING: \(message); run scripts/ci-setup or `pip install standardwebhooks`")
                }
            }
        }
    }

    @Test("receiver down then up: retried with backoff, delivered once it is up, signed afresh with a new timestamp")
    func downThenUp() async throws {
        try await OrchardHarness.withWebhooks(jobs: .byTest) { h, receiver in
            receiver.setDown(true)
            let token = try await h.signUp(h.emulator.makeUser())
            #expect(try await h.request(.DELETE, "/v1/account", bearer: token).status == 200)
            #expect(await h.runJobs()[.webhooks] == 1)
            #expect(receiver.attempts.count == 1)
            let failed = try #require(receiver.attempts.first)
            #expect(failed.answeredStatus == 503)
            #expect(try await h.lifecycle.outboxes.webhookDeliveries(status: "pending").first?.lastError == "HTTP 503")
            receiver.setDown(false)
            #expect(await h.runJobs()[.webhooks] == 0, "retried only after the backoff")
            h.clock.advance(by: 30)
            #expect(await h.runJobs()[.webhooks] == 1)
            #expect(receiver.delivered.count == 1)
            let delivered = try #require(receiver.delivered.first)
            #expect(delivered.headers["webhook-id"] == failed.headers["webhook-id"])
            #expect(delivered.body == failed.body)
            let before = Int(failed.headers["webhook-timestamp"] ?? "") ?? 0
            let after = Int(delivered.headers["webhook-timestamp"] ?? "") ?? 0
            #expect(after >= before + 30)
            #expect(delivered.headers["webhook-signature"] != failed.headers["webhook-signature"])
            #expect(delivered.headers["webhook-signature"] == Self.expectedSignature(delivered, secret: OrchardHarness.webhookSecret))
            #expect(await h.runJobs()[.webhooks] == 0, "a delivered event is not sent again")
            #expect(receiver.delivered.count == 1)
            #expect(try await h.lifecycle.outboxes.webhookDeliveries(status: "delivered").count == 1)
            #expect(h.counted("orchard_webhooks_total", [("outcome", "retry")]) == 1)
            #expect(h.counted("orchard_webhooks_total", [("outcome", "delivered")]) == 1)
        }
    }

    @Test("a receiver down for three days: the delivery is marked failed and listed for operators")
    func givesUpAfterThreeDays() async throws {
        try await OrchardHarness.withWebhooks { h, receiver in
            receiver.setDown(true)
            let token = try await h.signUp(h.emulator.makeUser())
            #expect(try await h.request(.DELETE, "/v1/account", bearer: token).status == 200)
            #expect(await eventually { (try? await h.lifecycle.outboxes.webhookDeliveries(status: "pending").first?.lastError) == "HTTP 503" })
            h.clock.advance(by: 3 * 86_400 + 1)
            #expect(await eventually { (try? await h.lifecycle.outboxes.webhookDeliveries(status: "failed").count) == 1 })
            let failed = try #require(try await h.lifecycle.outboxes.webhookDeliveries(status: "failed").first)
            #expect(failed.lastError == "HTTP 503")
            #expect(failed.delivery.eventType == "account.deleted")
            #expect(h.counted("orchard_webhooks_total", [("outcome", "failed")]) == 1)
            #expect(h.counted("orchard_webhooks_total", [("outcome", "delivered")]) == 0)
        }
    }

    @Test("without ORCHARD_WEBHOOK_URLS nothing is queued")
    func noURLs() async throws {
        try await OrchardHarness.with { h in
            let token = try await h.signUp(h.emulator.makeUser())
            #expect(try await h.request(.DELETE, "/v1/account", bearer: token).status == 200)
            #expect(try await h.database.count("SELECT COUNT(*) AS n FROM webhook_outbox") == 0)
        }
    }

    @Test("a secret without the whsec_ prefix is used as the key's bytes")
    func rawSecret() {
        let signer = WebhookSigner(secret: "plain-secret")
        let expected = HMAC<SHA256>.authenticationCode(for: Data("id.1.{}".utf8), using: SymmetricKey(data: Data("plain-secret".utf8)))
        #expect(signer.signature(id: "id", timestamp: 1, body: "{}") == "v1," + Data(expected).base64EncodedString())
    }
}
