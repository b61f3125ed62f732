import AppleID
import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import Logging
import OrchardTesting
import Testing

@Suite("App transfer at the emulator: team tokens, usermigrationinfo on both sides with Apple's errors, moving a client id")
struct AppTransferTests {
    /// A team access token for `clientID`, signed by `team`'s key.
    private func teamToken(_ h: EmulatorHarness, clientID: String = EmulatorHarness.appID, teamB: Bool = false) async throws -> String {
        let secret =
            teamB
            ? try await h.clientSecret(clientID: clientID, iss: EmulatorHarness.teamB, kid: EmulatorHarness.keyB, privateKeyPEM: h.teamBKeyPEM)
            : try await h.clientSecret(clientID: clientID)
        let answer = try await h.postForm(
            "/auth/token",
            ["grant_type": "client_credentials", "scope": "user.migration", "client_id": clientID, "client_secret": secret]
        )
        #expect(answer.status == 200, "\(answer.text)")
        return try #require(answer["access_token"])
    }

    @Test("client_credentials answers exactly Apple's three fields; without scope=user.migration it is invalid_scope")
    func teamAccessToken() async throws {
        try await EmulatorHarness.with { h in
            let secret = try await h.clientSecret()
            let answer = try await h.postForm(
                "/auth/token",
                ["grant_type": "client_credentials", "scope": "user.migration", "client_id": EmulatorHarness.appID, "client_secret": secret]
            )
            #expect(answer.status == 200)
            #expect(Set(answer.json.keys) == ["access_token", "token_type", "expires_in"])
            #expect(answer["token_type"] == "Bearer")
            #expect(answer.json["expires_in"] as? Int == 3600)
            let noScope = try await h.postForm(
                "/auth/token",
                ["grant_type": "client_credentials", "client_id": EmulatorHarness.appID, "client_secret": secret]
            )
            #expect(noScope.status == 400 && noScope.error == "invalid_scope")
        }
    }

    @Test(
        "the sending side: transfer_sub for an authorized user; invalid_request for a revoked one or a bad target; invalid_grant for a missing, foreign or expired bearer"
    )
    func sendingSide() async throws {
        try await EmulatorHarness.with { h in
            let (user, _) = try await h.signIn()
            let (revoked, _) = try await h.signIn()
            #expect(h.emulator.revokeGrant(sub: revoked.sub, clientID: EmulatorHarness.appID) == 1)
            let bearer = try await teamToken(h)
            func ask(_ sub: String, target: String = EmulatorHarness.teamB, bearer: String?) async throws -> EmulatorHarness.Answer {
                try await h.postForm(
                    "/auth/usermigrationinfo",
                    ["sub": sub, "target": target, "client_id": EmulatorHarness.appID, "client_secret": try await h.clientSecret()],
                    bearer: bearer
                )
            }
            let answer = try await ask(user.sub, bearer: bearer)
            #expect(answer.status == 200, "\(answer.text)")
            #expect(Set(answer.json.keys) == ["transfer_sub"])
            let transferSub = try #require(answer["transfer_sub"])
            #expect(transferSub != user.sub && transferSub.split(separator: ".").count == 3)
            #expect(try await ask(user.sub, bearer: bearer)["transfer_sub"] == transferSub)

            #expect(try await ask(revoked.sub, bearer: bearer).error == "invalid_request")
            #expect(try await ask(user.sub, target: EmulatorHarness.teamID, bearer: bearer).error == "invalid_request")
            #expect(try await ask(user.sub, target: "NOSUCHTEAM", bearer: bearer).error == "invalid_request")
            #expect(try await ask(user.sub, bearer: nil).error == "invalid_grant")
            #expect(try await ask(user.sub, bearer: try await teamToken(h, clientID: EmulatorHarness.webID)).error == "invalid_grant")
            let wrongTeam = try await h.postForm(
                "/auth/usermigrationinfo",
                [
                    "sub": user.sub, "target": EmulatorHarness.teamB, "client_id": EmulatorHarness.appID,
                    "client_secret": try await h.clientSecret(iss: EmulatorHarness.teamB, kid: EmulatorHarness.keyB, privateKeyPEM: h.teamBKeyPEM),
                ],
                bearer: bearer
            )
            #expect(wrongTeam.error == "invalid_client")
            h.clock.advance(by: 3601)
            #expect(try await ask(user.sub, bearer: bearer).error == "invalid_grant")
        }
    }

    @Test(
        "after /_emulator/transfer: team B's subjects, the exchange with the relay address, transfer_sub in identity tokens for 60 days, old tokens dead"
    )
    func receivingSide() async throws {
        try await EmulatorHarness.with { h in
            let relayUser = h.emulator.makeUser()
            let plainUser = h.emulator.makeUser(email: "ada@example.com")
            var refreshTokens: [String] = []
            for user in [relayUser, plainUser] {
                let authorization = try h.emulator.authorize(user: user, clientID: EmulatorHarness.appID)
                refreshTokens.append(try #require(try await h.exchange(code: authorization.authorizationCode)["refresh_token"]))
            }
            let bearerA = try await teamToken(h)
            var transferSubs: [String] = []
            for user in [relayUser, plainUser] {
                let answer = try await h.postForm(
                    "/auth/usermigrationinfo",
                    [
                        "sub": user.sub, "target": EmulatorHarness.teamB, "client_id": EmulatorHarness.appID,
                        "client_secret": try await h.clientSecret(),
                    ],
                    bearer: bearerA
                )
                transferSubs.append(try #require(answer["transfer_sub"]))
            }

            let move = try await h.postJSON("/_emulator/transfer", ["client_id": EmulatorHarness.appID, "to_team": EmulatorHarness.teamB])
            #expect(move.status == 204)
            #expect(try await h.postJSON("/_emulator/transfer", ["client_id": EmulatorHarness.appID, "to_team": "NOSUCHTEAM"]).status == 400)
            // Team A's secret no longer authenticates the app; team B's does.
            #expect(try await h.exchange(code: "c-anything").error == "invalid_client")
            let secretB = { try await h.clientSecret(iss: EmulatorHarness.teamB, kid: EmulatorHarness.keyB, privateKeyPEM: h.teamBKeyPEM) }
            let bearerB = try await teamToken(h, teamB: true)

            let relay = try await h.postForm(
                "/auth/usermigrationinfo",
                ["transfer_sub": transferSubs[0], "client_id": EmulatorHarness.appID, "client_secret": try await secretB()],
                bearer: bearerB
            )
            #expect(relay.status == 200, "\(relay.text)")
            let teamBSubject = h.emulator.subject(of: relayUser, clientID: EmulatorHarness.appID)
            #expect(teamBSubject != relayUser.sub)
            #expect(relay["sub"] == teamBSubject)
            let relayAddress = try #require(relay["email"])
            #expect(relayAddress.hasSuffix("@privaterelay.appleid.com") && relayAddress != relayUser.email)
            #expect(relay.json["is_private_email"] as? Bool == true)
            let plain = try await h.postForm(
                "/auth/usermigrationinfo",
                ["transfer_sub": transferSubs[1], "client_id": EmulatorHarness.appID, "client_secret": try await secretB()],
                bearer: bearerB
            )
            #expect(Set(plain.json.keys) == ["sub"], "only a private relay address is handed over: \(plain.text)")
            let unknown = try await h.postForm(
                "/auth/usermigrationinfo",
                ["transfer_sub": "000000.0000.0000", "client_id": EmulatorHarness.appID, "client_secret": try await secretB()],
                bearer: bearerB
            )
            #expect(unknown.error == "invalid_request")

            // The old team's tokens are dead for the new team.
            let refresh = try await h.postForm(
                "/auth/token",
                [
                    "grant_type": "refresh_token", "refresh_token": refreshTokens[0], "client_id": EmulatorHarness.appID,
                    "client_secret": try await secretB(),
                ]
            )
            #expect(refresh.error == "invalid_grant")

            // For 60 days the sending team can still ask for transfer identifiers, with its own key.
            let stillSending = try await h.postForm(
                "/auth/usermigrationinfo",
                [
                    "sub": relayUser.sub, "target": EmulatorHarness.teamB, "client_id": EmulatorHarness.appID,
                    "client_secret": try await h.clientSecret(),
                ],
                bearer: try await teamToken(h)
            )
            #expect(stillSending["transfer_sub"] == transferSubs[0], "\(stillSending.text)")

            // Identity tokens now carry team B's subject and, for 60 days, the transfer identifier.
            let after = try h.emulator.authorize(user: relayUser, clientID: EmulatorHarness.appID)
            let claims = try EmulatorHarness.decode(after.identityToken).payload
            #expect(claims["sub"] as? String == teamBSubject)
            #expect(claims["transfer_sub"] as? String == transferSubs[0])
            #expect(claims["email"] as? String == relayAddress)
            h.clock.advance(by: 61 * 86_400)
            let after60 = try EmulatorHarness.decode(try h.emulator.authorize(user: relayUser, clientID: EmulatorHarness.appID).identityToken)
                .payload
            #expect(after60["sub"] as? String == teamBSubject && after60["transfer_sub"] == nil)
            // After the 60 days: the exchange is refused, and the sending team's key no longer works for the app.
            let expired = try await h.postForm(
                "/auth/usermigrationinfo",
                ["transfer_sub": transferSubs[1], "client_id": EmulatorHarness.appID, "client_secret": try await secretB()],
                bearer: try await teamToken(h, teamB: true)
            )
            #expect(expired.error == "invalid_request", "\(expired.text)")
            let sendingTooLate = try await h.postForm(
                "/auth/token",
                [
                    "grant_type": "client_credentials", "scope": "user.migration", "client_id": EmulatorHarness.appID,
                    "client_secret": try await h.clientSecret(),
                ]
            )
            #expect(sendingTooLate.error == "invalid_client")
        }
    }

    @Test("Orchard's client: one team token per client id while it lives, a new one after it expires or when Apple says invalid_grant")
    func clientCachesTheTeamToken() async throws {
        try await EmulatorHarness.with { h in
            let (user, _) = try await h.signIn()
            let signer = try ClientSecretSigner(
                teamID: EmulatorHarness.teamID,
                keyID: EmulatorHarness.keyID,
                privateKeyPEM: h.clientKeyPEM,
                clock: h.clock
            )
            var logger = Logger(label: "test.apple-client")
            logger.logLevel = .warning
            let client = AppleRESTClient(
                AppleEndpoints(baseURL: URL(string: h.baseURL)!, httpClient: .shared, logger: logger),
                secrets: signer,
                clock: h.clock
            )
            func teamTokenCalls() -> Int { h.emulator.calls(to: .token).filter { $0.grantType == "client_credentials" }.count }
            let first = try await client.transferSub(for: Redacted(user.sub), target: EmulatorHarness.teamB, clientID: EmulatorHarness.appID)
            _ = try await client.transferSub(for: Redacted(user.sub), target: EmulatorHarness.teamB, clientID: EmulatorHarness.appID)
            #expect(teamTokenCalls() == 1)
            h.clock.advance(by: 3590)
            _ = try await client.transferSub(for: Redacted(user.sub), target: EmulatorHarness.teamB, clientID: EmulatorHarness.appID)
            #expect(teamTokenCalls() == 2, "less than a minute left: a new token")
            // Apple refuses the bearer once: the client drops it and tries again with a new one.
            h.emulator.injectFailure(endpoint: .userMigrationInfo, failure: .appleError("invalid_grant"), count: 1)
            let again = try await client.transferSub(for: Redacted(user.sub), target: EmulatorHarness.teamB, clientID: EmulatorHarness.appID)
            #expect(again == first)
            #expect(teamTokenCalls() == 3)
            // A user who stopped using Sign in with Apple with the app: Apple's invalid_request, as an error.
            #expect(h.emulator.revokeGrant(sub: user.sub, clientID: EmulatorHarness.appID) == 1)
            await #expect(throws: AppleIDError.self) {
                try await client.transferSub(for: Redacted(user.sub), target: EmulatorHarness.teamB, clientID: EmulatorHarness.appID)
            }
        }
    }
}
