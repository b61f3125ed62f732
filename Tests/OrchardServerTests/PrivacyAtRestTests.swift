import Accounts
import AppleIDEmulator
import Foundation
import InMemoryLogging
import Logging
import NIOHTTP1
import OrchardServer
import OrchardTesting
import SQLKit
import Storage
import Testing

@Suite("Personal data at rest")
struct PrivacyAtRestTests {
    @Test("no token, subject, email or name of a signed-up user is in the SQLite files in plaintext or base64")
    func rawByteScan() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser(email: "ada.lovelace@example.com", firstName: "Augusta", lastName: "Byronesque")
            let (response, authorization, _) = try await h.signIn(
                user,
                userDetails: ["name": ["first_name": "Augusta", "last_name": "Byronesque"], "email": "ada.lovelace@example.com"]
            )
            #expect(response.status == 200)
            let exchange = try #require(h.emulator.calls(to: .token).first)
            _ = exchange
            var secrets = [
                user.sub, "ada.lovelace@example.com", "Augusta", "Byronesque", authorization.identityToken, authorization.authorizationCode,
            ]
            for grant in h.emulator.issuedTokens(sub: user.sub) { secrets.append(grant) }
            let files = try await h.databaseBytes()
            #expect(!files.isEmpty)
            for file in files {
                for secret in secrets {
                    for form in [secret, Data(secret.utf8).base64EncodedString()] {
                        #expect(file.bytes.range(of: Data(form.utf8)) == nil, "a personal value was found in \(file.name)")
                    }
                }
            }
        }
    }
}

@Suite("Personal data in logs")
struct PrivacyInLogsTests {
    @Test("Orchard's logs at every level hold none of what Apple handed out, through sign-in, failures and deletion")
    func logsHoldNoSecrets() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser(email: "grace.hopper@example.com", firstName: "Grace", lastName: "Hopperton")
            let signedIn = try await h.signIn(user, userDetails: ["name": ["first_name": "Grace", "last_name": "Hopperton"]])
            #expect(signedIn.response.status == 200)
            let session = try #require((signedIn.response.json["session"] as? [String: Any])?["token"] as? String)
            // Failures log their reasons: a replay, a code Apple refuses, a token from another audience.
            let replay: [String: any Sendable] = [
                "identity_token": signedIn.authorization.identityToken, "authorization_code": signedIn.authorization.authorizationCode,
                "nonce": signedIn.nonce,
            ]
            #expect(try await h.request(.POST, "/v1/auth/apple", json: replay).code == "nonce_reused")
            h.emulator.injectFailure(endpoint: .token, failure: .appleError("invalid_grant"), count: 1)
            #expect(try await h.signIn(user).response.code == "authorization_code_rejected")
            #expect(try await h.signIn(user, clientID: OrchardHarness.webClientID).response.status == 200)
            let payload = try h.emulator.signNotification(type: "email-disabled", sub: user.sub, clientID: OrchardHarness.clientID)
            #expect(try await h.request(.POST, "/v1/apple/notifications", json: ["payload": payload]).status == 200)
            h.emulator.injectFailure(endpoint: .revoke, failure: .status(503), count: 1)
            let deleted = try await h.request(.DELETE, "/v1/account", bearer: session)
            #expect(deleted.status == 200)
            #expect(deleted["apple_revocation"] == "pending")
            h.clock.advance(by: 3)
            #expect(await eventually { h.emulator.revokedTokens().count == 1 })

            // The check looks at every level: debug lines were kept, and a secret logged at debug is caught.
            #expect(h.loggedLines.contains { $0.hasPrefix("debug ") })
            try await h.checkLogsHoldNoSecrets(also: [session])
            var leaky = Logger(label: "leaky") { _ in h.logs }
            leaky.logLevel = .trace
            leaky.debug("signed in", metadata: ["email": "\(user.email ?? "")"])
            await #expect(throws: HarnessError.self) { try await h.checkLogsHoldNoSecrets() }
            h.logs.clear()
            // A stored value is caught too, ciphertext or hash, at trace level: a bound SQL value logged by a driver.
            _ = try await h.signUp(h.emulator.makeUser())
            try await h.checkLogsHoldNoSecrets()
            let sealed = try await h.database.withDatabase { db in
                try await db.raw("SELECT subject_hash FROM accounts").first()?.decode(column: "subject_hash", as: String.self)
            }
            let stored = try #require(sealed)
            leaky.trace("Executing query", metadata: ["binds": "[\(stored)]"])
            await #expect(throws: HarnessError.self) { try await h.checkLogsHoldNoSecrets() }
            h.logs.clear()
        }
    }
}
