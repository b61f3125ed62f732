import Accounts
import AppleIDEmulator
import Foundation
import NIOHTTP1
import OrchardServer
import OrchardTesting
import SQLKit
import Storage
import Testing

@Suite("Account deletion through the HTTP API against the emulator")
struct DeletionTests {
    @Test("deletion revokes the refresh token with its hint, ends every session, and leaves an audit record only")
    func deletionRevokes() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser(email: "grace@example.com", firstName: "Gracelynne", lastName: "Hopperish")
            let token = try await h.signUp(user, name: ["first_name": "Gracelynne", "last_name": "Hopperish"])
            let other = try await h.signUp(user, device: "Gracelynne's Pixelbook")
            // A session ended before the deletion keeps its row until retention, but not its device label.
            let earlier = try await h.signUp(user, device: "Hopperish tablet")
            #expect(try await h.request(.DELETE, "/v1/session", bearer: earlier).status == 204)
            let response = try await h.request(.DELETE, "/v1/account", bearer: token)
            #expect(response.status == 200)
            #expect(response.json["deleted"] as? Bool == true)
            #expect(response["apple_revocation"] == "revoked")
            #expect(response.json["manual_revocation_url"] == nil)

            let revokes = h.emulator.calls(to: .revoke)
            #expect(revokes.count == 1)
            #expect(revokes.first?.tokenTypeHint == "refresh_token")
            #expect(revokes.first?.clientID == OrchardHarness.clientID)
            let revoked = try #require(revokes.first?.token)
            #expect(h.emulator.issuedTokens(sub: user.sub).contains(revoked))
            #expect(h.emulator.revocationCount(token: revoked).whileValid == 1)
            #expect(h.counted("orchard_revocations_total", [("outcome", "revoked")]) == 1)
            #expect(h.counted("orchard_revocations_total") == 1)
            #expect(h.counted("orchard_accounts_deleted_total", [("reason", "user_request")]) == 1)
            #expect(h.timerValues("orchard_apple_request_duration_seconds", [("endpoint", "revoke"), ("outcome", "ok")]).count == 1)

            for session in [token, other] {
                let after = try await h.request(.GET, "/v1/session", bearer: session)
                #expect(after.status == 401)
                #expect(after.code == "session_revoked")
                #expect(after["reason"] == "account_deleted")
            }
            #expect(try await h.accounts.listAccounts().isEmpty)
            #expect(await eventually { (try? await h.database.count("SELECT COUNT(*) AS n FROM revocations")) == 0 })
            #expect(
                try await h.database.count("SELECT COUNT(*) AS n FROM audit_events WHERE event = 'account.deleted' AND reason = 'user_request'") == 1
            )

            // Gone means gone: nothing of the user in any database file, plaintext or base64, WAL included. Every value
            // is 8 characters or more: a shorter one turns up by chance in the base64 ciphertext of a whole cluster.
            var secrets = [user.sub, "grace@example.com", "Gracelynne", "Hopperish", "Pixelbook"]
            secrets += h.emulator.issuedTokens(sub: user.sub)
            let files = try await h.databaseBytes()
            #expect(!files.isEmpty, "the scan found the database's files (on PostgreSQL: ORCHARD_TEST_POSTGRES_DATA)")
            // The sessions' rows stay a while (their session_revoked reason is promised), their device labels do not.
            #expect(try await h.database.count("SELECT COUNT(*) AS n FROM sessions WHERE sealed_device IS NOT NULL") == 0)
            for file in files {
                for secret in secrets {
                    for form in [secret, Data(secret.utf8).base64EncodedString()] {
                        #expect(file.bytes.range(of: Data(form.utf8)) == nil, "a value of the deleted user is in \(file.name)")
                    }
                }
            }
            // On SQLite not even ciphertext is left: every sealed value was removed with its row and overwritten.
            // (PostgreSQL keeps dead rows until vacuum; docs/deletion.md says what remains there and for how long.)
            // The one sealed value that stays is no user's: the access-token signing key's private half.
            if h.testDatabase.backend == .sqlite {
                let keys = try await h.database.read("SELECT sealed_private_key FROM signing_keys WHERE sealed_private_key IS NOT NULL")
                let signingKeys = try keys.map { Data(try $0.decode(column: "sealed_private_key", as: String.self).utf8) }
                #expect(!signingKeys.isEmpty)
                for file in files {
                    var from = file.bytes.startIndex
                    while let found = file.bytes.range(of: Data("v1.test1.".utf8), in: from..<file.bytes.endIndex) {
                        let isSigningKey = signingKeys.contains { key in
                            file.bytes.count >= found.lowerBound + key.count
                                && file.bytes[found.lowerBound..<found.lowerBound + key.count] == key
                        }
                        #expect(isSigningKey, "ciphertext left in \(file.name) at \(found.lowerBound)")
                        from = found.upperBound
                    }
                }
            }
        }
    }

    @Test("without a refresh token the access token is revoked, with its hint")
    func accessTokenFallback() async throws {
        try await OrchardHarness.with { h in
            h.emulator.omitRefreshToken(nextExchanges: 1)
            let user = h.emulator.makeUser()
            let signIn = try await h.signIn(user).response
            #expect((signIn.json["account"] as? [String: Any])?["apple_credential"] as? String == "unknown")
            let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
            let response = try await h.request(.DELETE, "/v1/account", bearer: token)
            #expect(response["apple_revocation"] == "revoked")
            #expect(h.emulator.calls(to: .revoke).first?.tokenTypeHint == "access_token")
        }
    }

    @Test("with no token held the account is still deleted and the answer is manual_required with Apple's page")
    func manualRequired() async throws {
        try await OrchardHarness.with { h in
            let token = try await h.signUp(h.emulator.makeUser())
            try await h.database.withDatabase { db in
                try await db.raw("UPDATE accounts SET sealed_refresh_token = NULL, sealed_access_token = NULL").run()
            }
            let response = try await h.request(.DELETE, "/v1/account", bearer: token)
            #expect(response.status == 200)
            #expect(response["apple_revocation"] == "manual_required")
            #expect(response["manual_revocation_url"] == "https://support.apple.com/en-us/102571")
            #expect(h.emulator.calls(to: .revoke).isEmpty)
            #expect(try await h.accounts.listAccounts().isEmpty)
        }
    }

    @Test("during an Apple outage deletion answers pending, and the worker revokes exactly once after recovery")
    func outageThenRecovery() async throws {
        try await OrchardHarness.with { h in
            let user = h.emulator.makeUser()
            let token = try await h.signUp(user)
            h.emulator.injectFailure(endpoint: .revoke, failure: .status(503), count: 1)
            let response = try await h.request(.DELETE, "/v1/account", bearer: token)
            #expect(response.status == 200)
            #expect(response["apple_revocation"] == "pending")
            #expect(try await h.accounts.listAccounts().isEmpty)
            #expect(try await h.database.count("SELECT COUNT(*) AS n FROM revocations") == 1)
            let pending = try await h.lifecycle.outboxes.pendingRevocations()
            #expect(pending.first?.attempts == 1)
            #expect(pending.first?.lastError == "apple_unavailable")
            #expect(h.counted("orchard_revocations_total", [("outcome", "retry")]) == 1)
            #expect(h.timerValues("orchard_apple_request_duration_seconds", [("endpoint", "revoke"), ("outcome", "unavailable")]).count == 1)

            // The retry is due 2 s (plus jitter) later by Orchard's clock.
            h.clock.advance(by: 3)
            let done = await eventually { (try? await h.database.count("SELECT COUNT(*) AS n FROM revocations")) == 0 }
            #expect(done)
            let revokes = h.emulator.calls(to: .revoke)
            #expect(revokes.count == 2)
            #expect(revokes.map(\.status) == [503, 200])
            #expect(h.counted("orchard_revocations_total", [("outcome", "revoked")]) == 1)
            let revoked = try #require(revokes.last?.token)
            #expect(h.emulator.revocationCount(token: revoked).whileValid == 1)
            #expect(h.emulator.revocationCount(token: revoked).total == 1)
        }
    }

    @Test("Apple timing out makes the request answer pending after its 5 s wait")
    func timeout() async throws {
        try await OrchardHarness.with { h in
            let token = try await h.signUp(h.emulator.makeUser())
            h.emulator.injectFailure(endpoint: .revoke, failure: .timeout, count: 1)
            let started = Date()
            let response = try await h.request(.DELETE, "/v1/account", bearer: token)
            #expect(response["apple_revocation"] == "pending")
            #expect(Date().timeIntervalSince(started) < 30)
        }
    }

    @Test("invalid_client keeps the revocation queued (a configuration fault), and it completes once Apple accepts")
    func invalidClient() async throws {
        try await OrchardHarness.with { h in
            let token = try await h.signUp(h.emulator.makeUser())
            h.emulator.injectFailure(endpoint: .revoke, failure: .appleError("invalid_client"), count: 1)
            let response = try await h.request(.DELETE, "/v1/account", bearer: token)
            #expect(response["apple_revocation"] == "pending")
            #expect(try await h.lifecycle.outboxes.pendingRevocations().first?.lastError == "apple_client_rejected")
            #expect(h.counted("orchard_apple_client_rejected_total", [("endpoint", "revoke")]) == 1)
            #expect(h.timerValues("orchard_apple_request_duration_seconds", [("endpoint", "revoke"), ("outcome", "rejected")]).count == 1)
            h.clock.advance(by: 3)
            #expect(await eventually { (try? await h.database.count("SELECT COUNT(*) AS n FROM revocations")) == 0 })
        }
    }

    @Test("while the request waits on Apple for its revocation, the background worker cannot take the row it holds")
    func noDoubleRevocation() async throws {
        // A wait far longer than Apple holds the call, so that the request sees Apple's answer even on a loaded machine.
        try await OrchardHarness.with(
            jobs: .byTest,
            deadlines: Deadlines(revocationWait: .seconds(30), appleCall: .seconds(60)),
            noDoubleRevocationBody
        )
    }

    private func noDoubleRevocationBody(_ h: OrchardHarness) async throws {
        let user = h.emulator.makeUser()
        let token = try await h.signUp(user)
        // Apple holds the request's call until the worker's passes are done, however long they take here.
        h.emulator.holdCalls { $0.endpoint == .revoke }
        let deletion = Task { try await h.request(.DELETE, "/v1/account", bearer: token) }
        // The request's call is at Apple: the row it wrote is leased to it, so no pass of the worker may claim it, even
        // with the clock anywhere within the request's wait.
        #expect(await eventually { h.emulator.calls(to: .revoke).count == 1 })
        #expect(await h.runJobs()[.revocations] == 0)
        h.clock.advance(by: 20)
        #expect(await h.runJobs()[.revocations] == 0)
        h.emulator.releaseHeldCalls()
        #expect(try await deletion.value["apple_revocation"] == "revoked")
        #expect(await h.runJobs()[.revocations] == 0)
        #expect(h.emulator.calls(to: .revoke).count == 1)
    }

    @Test("a deleted account's session gets 401 on every authenticated call, and deleting twice is refused")
    func afterDeletion() async throws {
        try await OrchardHarness.with { h in
            let token = try await h.signUp(h.emulator.makeUser())
            #expect(try await h.request(.DELETE, "/v1/account", bearer: token).status == 200)
            let again = try await h.request(.DELETE, "/v1/account", bearer: token)
            #expect(again.status == 401)
            #expect(try await h.request(.DELETE, "/v1/account").code == "session_invalid")
            #expect(h.emulator.calls(to: .revoke).count == 1)
        }
    }

    @Test("a sign-in that finds its account deleted meanwhile fails cleanly: no session, no account, Apple's new grant revoked")
    func signInRacingDeletion() async throws {
        // The deletion's revocation is held at Apple while the sign-in finishes: its wait must outlast that.
        try await OrchardHarness.with(deadlines: Deadlines(revocationWait: .seconds(60))) { h in
            let user = h.emulator.makeUser()
            let token = try await h.signUp(user)
            let before = Set(h.emulator.issuedTokens(sub: user.sub))
            // The second sign-in's code exchange is held at Apple until the deletion has committed, however long that
            // takes on this machine; the deletion's revocation is held too, so that Apple still honours the code.
            h.emulator.holdCalls { $0.grantType == "authorization_code" || $0.endpoint == .revoke }
            async let racing = h.signIn(user)
            #expect(await eventually { h.emulator.calls(to: .token).count == 2 })
            async let deletion = h.request(.DELETE, "/v1/account", bearer: token)
            #expect(await eventually { (try? await h.accounts.listAccounts().isEmpty) == true }, "the deletion did not commit")
            h.emulator.holdCalls { $0.endpoint == .revoke }

            let refused = try await racing.response
            #expect(refused.status == 401)
            #expect(refused.code == "authorization_code_rejected")
            h.emulator.releaseHeldCalls()
            let deleted = try await deletion
            #expect(deleted.status == 200)
            #expect(deleted["apple_revocation"] == "revoked")
            #expect(try await h.accounts.listAccounts().isEmpty)
            // Only the deleted account's own session row is left (ended, for session_revoked account_deleted).
            #expect(try await h.database.count("SELECT COUNT(*) AS n FROM sessions") == 1)
            // The grant Apple gave the refused sign-in is revoked in the background, besides the deleted account's.
            let fresh = Set(h.emulator.issuedTokens(sub: user.sub)).subtracting(before)
            #expect(!fresh.isEmpty)
            #expect(
                await eventually { !fresh.isDisjoint(with: h.emulator.calls(to: .revoke).compactMap(\.token)) },
                "the refused sign-in's refresh token was never revoked"
            )
            #expect(await eventually { (try? await h.database.count("SELECT COUNT(*) AS n FROM revocations")) == 0 })

            // Signing in again afterwards makes a new account.
            h.emulator.setLatency(.zero)
            let again = try await h.signIn(user).response
            #expect(again.status == 200)
            #expect(again.json["is_new_account"] as? Bool == true)
        }
    }
}
