import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import SQLKit
import Storage
import Synchronization
import Testing

/// The lifecycle acts on what its own transaction sees, not on an earlier read: a notification about an old grant
/// never ends a newer one, a deletion revokes the token it removed, and a validation's verdict ends sessions only if
/// the token it validated is still held.
@Suite("Acting on what was read")
struct StaleReadTests {
    @Test(
        "a consent-revoked about a grant older than the latest is recorded and not acted on, under either policy",
        arguments: [ConsentRevokedPolicy.signOut, .delete]
    )
    func lateConsentRevoked(_ policy: ConsentRevokedPolicy) async throws {
        try await OrchardHarness.withWebhooks(policy: policy) { h, receiver in
            let user = h.emulator.makeUser()
            _ = try await h.signUp(user)
            let firstGrant = h.clock.now()
            // The user stops using Sign in with Apple with the app, and five minutes later signs in again: a new grant.
            h.clock.advance(by: 300)
            _ = h.emulator.revokeGrant(sub: user.sub)
            let token = try await h.signUp(user)
            // Apple's notification about the first grant arrives after that.
            let jti = "late-\(UUID().uuidString)"
            let payload = try h.emulator.signNotification(
                type: "consent-revoked",
                sub: user.sub,
                clientID: OrchardHarness.clientID,
                jti: jti,
                eventTime: firstGrant.addingTimeInterval(100)
            )
            #expect(try await h.postNotification(payload).status == 200)
            #expect(await h.processed(jti))
            #expect(try await h.inboxRow(jti)?.outcome == "predates_grant")
            let session = try await h.request(.GET, "/v1/session", bearer: token)
            #expect(session.status == 200, "the newer grant's session was ended")
            #expect((session.json["account"] as? [String: Any])?["apple_credential"] as? String == "valid")
            #expect(try await h.accounts.listAccounts().count == 1)
            #expect(h.emulator.calls(to: .revoke).isEmpty)
            #expect(receiver.delivered.isEmpty)

            // An event after the latest grant is acted on.
            let current = try h.emulator.signNotification(type: "consent-revoked", sub: user.sub, clientID: OrchardHarness.clientID)
            #expect(try await h.postNotification(current).status == 200)
            #expect(await eventually { (try? await h.request(.GET, "/v1/session", bearer: token).status) == 401 })
        }
    }

    @Test("a deletion revokes the refresh token its transaction removed, even one a sign-in stored after the deletion read the account")
    func deletionRevokesWhatItRemoved() async throws {
        let gate = Mutex<GatedDatabaseClient?>(nil)
        try await OrchardHarness.with(
            wrapDatabase: { base in
                let gated = GatedDatabaseClient(base)
                gate.withLock { $0 = gated }
                return gated
            },
            { h in
                let gated = try #require(gate.withLock { $0 })
                let user = h.emulator.makeUser()
                let first = try await h.signUp(user)
                // A grant of its own for the second sign-in: revoking the first token would not end it.
                _ = h.emulator.revokeGrant(sub: user.sub)
                // Hold the deletion once it has read the session and its account.
                gated.arm { $0.contains("FROM sessions s LEFT JOIN accounts a") }
                let deletion = Task { try await h.request(.DELETE, "/v1/account", bearer: first) }
                #expect(await eventually { gated.isHolding })
                _ = try await h.signUp(user)
                gated.open()
                let answer = try await deletion.value
                #expect(answer.status == 200)
                #expect(answer["apple_revocation"] == "revoked")
                // Both grants are over at Apple: the first revoked from Apple ID settings, the second by the deletion.
                let issued = h.emulator.issuedTokens(sub: user.sub)
                #expect(issued.count == 4, "a refresh and an access token per grant")
                #expect(issued.allSatisfy { h.emulator.isRevoked(token: $0) }, "the sign-in's grant in between is live at Apple")
                #expect(h.emulator.revocations().count == 1)
            }
        )
    }

    @Test("a validation's invalid_grant for a token a sign-in has replaced ends no session and keeps the new schedule")
    func validationOfAReplacedToken() async throws {
        try await OrchardHarness.withWebhooks { h, receiver in
            let user = h.emulator.makeUser()
            _ = try await h.signUp(user)
            _ = h.emulator.revokeGrant(sub: user.sub)
            // The validation's call is held at Apple until the user has signed in again, however long that takes.
            h.emulator.holdCalls { $0.grantType == "refresh_token" }
            h.clock.advance(by: RefreshValidationTests.pastDue)
            #expect(await eventually { RefreshValidationTests.refreshCalls(h).count == 1 })
            let token = try await h.signUp(user)
            h.emulator.releaseHeldCalls()
            #expect(await eventually { h.counted("orchard_refresh_validations_total", [("outcome", "invalid_grant")]) == 1 })
            let session = try await h.request(.GET, "/v1/session", bearer: token)
            #expect(session.status == 200, "the new grant's session was ended by a verdict on the old token")
            #expect((session.json["account"] as? [String: Any])?["apple_credential"] as? String == "valid")
            #expect(receiver.delivered.isEmpty)
            let scheduled = try await h.database.withDatabase { db in
                try await db.raw("SELECT next_validation_at FROM accounts").first()?.decode(column: "next_validation_at", as: Int64?.self)
            }
            #expect(scheduled != nil, "the new grant's validation schedule was wiped")
        }
    }
}
