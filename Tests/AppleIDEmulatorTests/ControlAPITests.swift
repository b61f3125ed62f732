import AppleIDEmulator
import Foundation
import NIOCore
import NIOHTTP1
import OrchardTesting
import Testing

@Suite("The /_emulator/ control API")
struct ControlAPITests {
    @Test("a Work & School user: org_id, an empty email and email_verified false in the identity token, kept for the next sign-in")
    func managedAccount() async throws {
        try await EmulatorHarness.with { h in
            let first = try await h.postJSON(
                "/_emulator/authorize",
                [
                    "client_id": EmulatorHarness.appID,
                    "user": ["email": "", "email_verified": false, "org_id": "org_school_1"] as [String: any Sendable],
                ]
            )
            #expect(first.status == 200)
            let token = try EmulatorHarness.decode(try #require(first["identity_token"])).payload
            #expect(token["org_id"] as? String == "org_school_1")
            #expect(token["email"] as? String == "")
            #expect(token["email_verified"] as? Bool == false)
            let again = try await h.postJSON(
                "/_emulator/authorize",
                ["client_id": EmulatorHarness.appID, "user": ["sub": try #require(first["sub"])]]
            )
            #expect(try EmulatorHarness.decode(try #require(again["identity_token"])).payload["org_id"] as? String == "org_school_1")
            let consumer = try await h.postJSON("/_emulator/authorize", ["client_id": EmulatorHarness.appID])
            #expect(try EmulatorHarness.decode(try #require(consumer["identity_token"])).payload["org_id"] == nil)
        }
    }

    @Test("a user's relay address is made under private.icloud.com when the control API's user asks for it")
    func newerRelayDomain() async throws {
        try await EmulatorHarness.with { h in
            let newer = try await h.postJSON(
                "/_emulator/authorize",
                ["client_id": EmulatorHarness.appID, "user": ["relay_domain": "private.icloud.com"]]
            )
            #expect(newer.status == 200)
            let email = try #require(newer["email"])
            #expect(email.hasSuffix("@private.icloud.com"), "\(email)")
            let token = try EmulatorHarness.decode(try #require(newer["identity_token"])).payload
            #expect(token["email"] as? String == email)
            #expect(token["is_private_email"] as? Bool == true)
            let older = try await h.postJSON("/_emulator/authorize", ["client_id": EmulatorHarness.appID])
            #expect(older["email"]?.hasSuffix("@privaterelay.appleid.com") == true, "the default stays the older domain")
        }
    }

    @Test("POST /_emulator/authorize mints a token and a code that exchange; a known sub signs the same user in again")
    func authorize() async throws {
        try await EmulatorHarness.with { h in
            let first = try await h.postJSON(
                "/_emulator/authorize",
                [
                    "client_id": EmulatorHarness.appID,
                    "nonce": "abc123",
                    "user": [
                        "first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.com", "is_private_email": false,
                    ] as [String: any Sendable],
                ]
            )
            #expect(first.status == 200)
            let sub = try #require(first["sub"])
            #expect(first["email"] == "ada@example.com")
            #expect(first.json["is_first_authorization"] as? Bool == true)
            let appleUser = try #require(first.json["user"] as? [String: Any])
            #expect((appleUser["name"] as? [String: String])?["firstName"] == "Ada")
            let token = try EmulatorHarness.decode(try #require(first["identity_token"])).payload
            #expect(token["sub"] as? String == sub)
            #expect(token["nonce"] as? String == "abc123")
            #expect(token["is_private_email"] as? Bool == false)
            #expect(try await h.exchange(code: try #require(first["authorization_code"])).status == 200)

            let again = try await h.postJSON("/_emulator/authorize", ["client_id": EmulatorHarness.appID, "user": ["sub": sub]])
            #expect(again["sub"] == sub)
            #expect(again["email"] == "ada@example.com")
            #expect(again.json["is_first_authorization"] as? Bool == false)
            #expect(again.json["user"] == nil)

            let fresh = try await h.postJSON("/_emulator/authorize", ["client_id": EmulatorHarness.webID])
            #expect(fresh["email"]?.hasSuffix("@privaterelay.appleid.com") == true)
            let defaulted = try await h.postJSON("/_emulator/authorize", [:])
            #expect(defaulted.status == 200)
            #expect(try EmulatorHarness.decode(try #require(defaulted["identity_token"])).payload["aud"] as? String == EmulatorHarness.appID)

            let unknownClient = try await h.postJSON("/_emulator/authorize", ["client_id": "com.example.unknown"])
            #expect(unknownClient.status == 400)
            #expect(unknownClient.error == "invalid_request")
            let notJSON = try await h.send(.POST, "/_emulator/authorize", body: Data("{".utf8), contentType: "application/json")
            #expect(notJSON.status == 400)
        }
    }

    @Test("POST /_emulator/revoke-grant ends the user's grant")
    func revokeGrant() async throws {
        try await EmulatorHarness.with { h in
            let (user, tokens) = try await h.signIn()
            let answer = try await h.postJSON("/_emulator/revoke-grant", ["sub": user.sub, "client_id": EmulatorHarness.appID])
            #expect(answer.status == 200)
            #expect(answer.json["revoked_grants"] as? Int == 1)
            #expect(try await h.refresh(try #require(tokens["refresh_token"])).error == "invalid_grant")
        }
    }

    @Test("POST /_emulator/failures injects status, Apple error and timeout failures; DELETE clears them")
    func failures() async throws {
        try await EmulatorHarness.with { h in
            let answer1 = try await h.postJSON("/_emulator/failures", ["endpoint": "keys", "status": 502, "count": 2])
            #expect(answer1.status == 204)
            let answer2 = try await h.send(.GET, "/auth/keys")
            #expect(answer2.status == 502)
            let answer3 = try await h.send(.GET, "/auth/keys")
            #expect(answer3.status == 502)
            let answer4 = try await h.send(.GET, "/auth/keys")
            #expect(answer4.status == 200)

            let answer5 = try await h.postJSON("/_emulator/failures", ["endpoint": "revoke", "apple_error": "invalid_client"])
            #expect(answer5.status == 204)
            #expect(try await h.revoke("r-any").error == "invalid_client")
            #expect(try await h.revoke("r-any").status == 200)

            let answer6 = try await h.postJSON("/_emulator/failures", ["endpoint": "keys", "timeout": true, "count": 1])
            #expect(answer6.status == 204)
            await #expect(throws: (any Error).self) {
                _ = try await h.send(.GET, "/auth/keys", timeout: .milliseconds(200))
            }

            let answer7 = try await h.postJSON("/_emulator/failures", ["endpoint": "token", "status": 500, "count": 5])
            #expect(answer7.status == 204)
            let answer8 = try await h.send(.DELETE, "/_emulator/failures")
            #expect(answer8.status == 204)
            #expect(try await h.signIn().tokens.status == 200)

            let bad = try await h.postJSON("/_emulator/failures", ["endpoint": "nosuch", "status": 500])
            #expect(bad.status == 400)
            let ambiguous = try await h.postJSON("/_emulator/failures", ["endpoint": "token", "status": 500, "timeout": true])
            #expect(ambiguous.status == 400)
        }
    }

    @Test("POST /_emulator/omit-refresh-token and /_emulator/latency steer the next answers")
    func omitAndLatency() async throws {
        try await EmulatorHarness.with { h in
            let answer9 = try await h.postJSON("/_emulator/omit-refresh-token", ["count": 1])
            #expect(answer9.status == 204)
            #expect(try await h.signIn().tokens.json["refresh_token"] == nil)
            #expect(try await h.signIn().tokens["refresh_token"] != nil)

            let answer10 = try await h.postJSON("/_emulator/latency", ["ms": 250])
            #expect(answer10.status == 204)
            #expect(h.emulator.latency == .milliseconds(250))
        }
    }

    @Test("POST /_emulator/notifications signs a notification, and posts it when asked")
    func notifications() async throws {
        let receiver = NotificationReceiver()
        try await receiver.run { url in
            try await EmulatorHarness.with(notifyURL: url) { h in
                let signed = try await h.postJSON(
                    "/_emulator/notifications",
                    [
                        "type": "email-enabled", "sub": "000001.abc.0001", "client_id": EmulatorHarness.appID, "email": "x@privaterelay.appleid.com",
                        "is_private_email": true, "jti": "jti-1",
                    ]
                )
                #expect(signed.status == 200)
                let payload = try EmulatorHarness.decode(try #require(signed["payload"])).payload
                #expect(payload["jti"] as? String == "jti-1")
                #expect(signed.json["status"] == nil)
                #expect(receiver.received.isEmpty)

                let sent = try await h.postJSON(
                    "/_emulator/notifications",
                    ["type": "account-delete", "sub": "000001.abc.0001", "client_id": EmulatorHarness.appID, "send": true]
                )
                #expect(sent.status == 200)
                #expect(sent.json["status"] as? Int == 200)
                #expect(receiver.received.count == 1)

                let defaulted = try await h.postJSON("/_emulator/notifications", ["type": "email-disabled", "sub": "000001.abc.0001"])
                #expect(defaulted.status == 200)
                #expect(try EmulatorHarness.decode(try #require(defaulted["payload"])).payload["aud"] as? String == EmulatorHarness.appID)
            }
        }
    }

    @Test("GET and DELETE /_emulator/calls read and clear the call log; GET /_emulator/revocations lists revocations")
    func callsAndRevocations() async throws {
        try await EmulatorHarness.with { h in
            let (_, tokens) = try await h.signIn()
            let refreshToken = try #require(tokens["refresh_token"])
            _ = try await h.revoke(refreshToken)
            let log = try await h.send(.GET, "/_emulator/calls")
            let calls = try #require(log.json["calls"] as? [[String: Any]])
            #expect(calls.map { $0["endpoint"] as? String } == ["token", "revoke"])
            #expect(calls.first?["grant_type"] as? String == "authorization_code")
            #expect(calls.last?["token"] as? String == refreshToken)
            #expect(calls.last?["status"] as? Int == 200)
            #expect((calls.last?["time"] as? String)?.hasSuffix("Z") == true)

            let revocations = try await h.send(.GET, "/_emulator/revocations")
            let list = try #require(revocations.json["revocations"] as? [[String: Any]])
            #expect(list.first?["was_valid"] as? Bool == true)

            let answer11 = try await h.send(.DELETE, "/_emulator/calls")
            #expect(answer11.status == 204)
            #expect(h.emulator.calls().isEmpty)
        }
    }

    @Test("POST /_emulator/rotate-key publishes a new signing key")
    func rotateKey() async throws {
        try await EmulatorHarness.with { h in
            let answer = try await h.send(.POST, "/_emulator/rotate-key")
            #expect(answer.status == 200)
            #expect(answer["kid"] == h.emulator.currentSigningKeyID)
            #expect(h.emulator.signingKeyIDs.count == 2)
        }
    }
}
