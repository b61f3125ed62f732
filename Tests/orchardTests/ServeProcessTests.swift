import AppleIDEmulator
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import OrchardTesting
import Storage
import Testing

@Suite("orchard serve as a process: crashes, restarts, and the operator's deletion", .backendIndependent)
struct ServeProcessTests {
    /// An emulator on real time and the environment an `orchard serve` needs to use it.
    struct Setup {
        let emulator: AppleEmulator
        let running: RunningEmulator
        let directory: TemporaryDirectory
        var environment: [String: String]
        let http: HTTPClient

        static func start(timeoutHold: Duration = .seconds(8), otherTeams: [EmulatorTeam] = []) async throws -> Setup {
            let key = AppleEmulatorConfiguration.makeClientKey()
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let emulator = try AppleEmulator(
                configuration: AppleEmulatorConfiguration(
                    teamID: "TEAMID1234",
                    keyID: "KEYID12345",
                    clientIDs: ["com.example.orchard.app"],
                    clientPublicKeyPEM: key.publicKeyPEM,
                    timeoutHold: timeoutHold,
                    otherTeams: otherTeams
                ),
                httpClient: http
            )
            let running = try await emulator.start()
            let directory = try TemporaryDirectory()
            try key.privateKeyPEM.write(toFile: directory.file("key.p8"), atomically: true, encoding: .utf8)
            let environment = [
                "APPLE_TEAM_ID": "TEAMID1234", "APPLE_KEY_ID": "KEYID12345", "APPLE_PRIVATE_KEY_FILE": directory.file("key.p8"),
                "APPLE_CLIENT_IDS": "com.example.orchard.app", "APPLE_BASE_URL": running.baseURL,
                "ORCHARD_VAULT_KEYS": "k1:\(Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString())",
                "ORCHARD_DATABASE_URL": "sqlite:\(directory.file("orchard.sqlite"))", "ORCHARD_LOG_LEVEL": "info",
            ]
            return Setup(emulator: emulator, running: running, directory: directory, environment: environment, http: http)
        }

        func client(_ serve: ServeProcess) -> OrchardClient {
            OrchardClient(baseURL: serve.baseURL, http: http, emulator: emulator)
        }

        func stop() async {
            await running.stop()
            try? await http.shutdown()
            directory.remove()
        }
    }

    @Test("kill -9 with a pending revocation: after a restart the revocation completes, exactly once")
    func killAndRestart() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let first = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.directory.path, http: setup.http)
        let client = setup.client(first)
        let user = setup.emulator.makeUser()
        let signIn = try await client.signIn(user, clientID: "com.example.orchard.app").response
        let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
        setup.emulator.injectFailure(endpoint: .revoke, failure: .status(503), count: 1000)
        let deletion = try await client.request(.DELETE, "/v1/account", bearer: token)
        #expect(deletion["apple_revocation"] == "pending")
        await first.kill()

        setup.emulator.clearFailures()
        let second = try await ServeProcess.start(
            environment: setup.environment,
            port: first.port,
            logDirectory: setup.directory.path,
            http: setup.http
        )
        let revoked = await eventually {
            setup.emulator.calls(to: .revoke).contains { $0.status == 200 }
        }
        #expect(revoked, "\(second.logText)")
        let accepted = setup.emulator.calls(to: .revoke).filter { $0.status == 200 }
        #expect(accepted.count == 1)
        let refreshToken = try #require(accepted.first?.token)
        #expect(setup.emulator.revocationCount(token: refreshToken).whileValid == 1)
        #expect(await setup.client(second).waitForJobPasses("revocations"))
        #expect(setup.emulator.calls(to: .revoke).filter { $0.status == 200 }.count == 1)
        #expect(await second.terminate() == 0)
        let pending = try await OrchardProcess.runInBackground(["accounts", "revocations"], environment: setup.environment)
        #expect(pending.standardOutput.contains("(none pending)"), "\(pending.standardOutput)\(pending.standardError)")
    }

    @Test("SIGTERM while a revocation is in flight: Apple sees it once, its outcome is recorded, exit 0 in time, a restart sends nothing")
    func gracefulDrain() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        // A grace far above what the drain needs: the test is about the call being let finish and recorded.
        var environment = setup.environment
        environment["ORCHARD_SHUTDOWN_GRACE"] = "30"
        let serve = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
        let client = setup.client(serve)
        let signIn = try await client.signIn(setup.emulator.makeUser(), clientID: "com.example.orchard.app").response
        let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
        // The deletion's own attempt fails; Apple then holds the background worker's retry until serve is told to stop
        // and has stopped accepting, and answers it at once: no guessed latency, against Orchard's own 10 s a call.
        setup.emulator.injectFailure(endpoint: .revoke, failure: .status(503), count: 1)
        setup.emulator.holdCalls { [emulator = setup.emulator] call in
            call.endpoint == .revoke && emulator.calls(to: .revoke).count >= 2
        }
        let deletion = try await client.request(.DELETE, "/v1/account", bearer: token)
        #expect(deletion["apple_revocation"] == "pending")
        let retryInFlight = await eventually {
            setup.emulator.calls(to: .revoke).count == 2 && setup.emulator.calls(to: .revoke).last?.status == nil
        }
        #expect(retryInFlight, "the background retry never reached Apple: \(serve.logText)")

        let started = ContinuousClock.now
        serve.send(SIGTERM)
        #expect(await eventually { !serve.isListening }, "serve kept accepting after SIGTERM: \(serve.logText)")
        #expect(setup.emulator.calls(to: .revoke).last?.status == nil, "the retry was answered before serve began to stop")
        setup.emulator.releaseHeldCalls()
        let status = await serve.exitStatus()
        let took = ContinuousClock.now - started
        #expect(status == 0, "\(serve.logText)")
        #expect(took < .seconds(30), "shutdown took \(took), past ORCHARD_SHUTDOWN_GRACE: \(serve.logText)")
        // The call in flight was let finish (Apple answered once serve was stopping) and its outcome recorded before exit.
        let revokes = setup.emulator.calls(to: .revoke)
        #expect(revokes.count == 2)
        #expect(revokes.last?.status == 200)
        let pending = try await OrchardProcess.runInBackground(["accounts", "revocations"], environment: setup.environment)
        #expect(pending.standardOutput.contains("(none pending)"), "\(pending.standardOutput)\(pending.standardError)")

        let restarted = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.directory.path, http: setup.http)
        #expect(await setup.client(restarted).waitForJobPasses("revocations"))
        #expect(setup.emulator.calls(to: .revoke).count == 2, "the restart sent the revocation again")
        #expect(await restarted.terminate() == 0)
    }

    @Test("a queued token under a vault key no longer configured: a recorded failure, vault_key_missing, retried with backoff")
    func vaultKeyMissing() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let first = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.directory.path, http: setup.http)
        let signIn = try await setup.client(first).signIn(setup.emulator.makeUser(), clientID: "com.example.orchard.app").response
        let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
        setup.emulator.injectFailure(endpoint: .revoke, failure: .status(503), count: 1000)
        #expect(try await setup.client(first).request(.DELETE, "/v1/account", bearer: token)["apple_revocation"] == "pending")
        #expect(await first.terminate() == 0)
        let callsBefore = setup.emulator.calls(to: .revoke).count

        // The key that sealed the queued token is gone from the configuration.
        var environment = setup.environment
        environment["ORCHARD_VAULT_KEYS"] = "k2:\(Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString())"
        let second = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
        var listing = ""
        let recorded = await eventually {
            listing = (try? await OrchardProcess.runInBackground(["accounts", "revocations"], environment: environment).standardOutput) ?? ""
            return listing.contains("vault_key_missing")
        }
        #expect(recorded, "\(listing)\n\(second.logText)")
        // Retried with backoff, not in a tight loop; and nothing reached Apple without a token to send.
        let row = try #require(listing.split(separator: "\n").first { $0.contains("vault_key_missing") })
        let attempts = Int(row.split(separator: "\t")[3]) ?? 0
        #expect((2...4).contains(attempts), "\(row)")
        #expect(setup.emulator.calls(to: .revoke).count == callsBefore)
        #expect(await second.terminate() == 0)
    }

    @Test("orchard accounts delete runs the same deletion as the API, beside a running server")
    func operatorDelete() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        let serve = try await ServeProcess.start(environment: setup.environment, logDirectory: setup.directory.path, http: setup.http)
        let client = setup.client(serve)
        let user = setup.emulator.makeUser()
        let signIn = try await client.signIn(user, clientID: "com.example.orchard.app").response
        let token = try #require((signIn.json["session"] as? [String: Any])?["token"] as? String)
        let id = try #require((signIn.json["account"] as? [String: Any])?["id"] as? String)

        // serve's own metrics and its start-up warning about a stand-in for Apple.
        let metrics = String(decoding: try await client.request(.GET, "/metrics").body, as: UTF8.self)
        #expect(metrics.contains("orchard_sign_ins_total"))
        #expect(metrics.contains("orchard_apple_request_duration_seconds"))
        #expect(metrics.contains("orchard_apple_base_url_overridden 1"))
        // The request metrics under Hummingbird's names, which the shipped alerts and dashboard read.
        #expect(metrics.contains(#"hb_requests{http_route="/v1/auth/apple",http_request_method="POST",http_response_status_code="200"} 1"#))
        #expect(
            metrics.contains(
                #"http_server_request_duration_count{http_route="/v1/auth/apple",http_request_method="POST",http_response_status_code="200"} 1"#
            )
        )
        #expect(metrics.contains(#"http_server_active_requests{http_request_method="GET"} 1"#), "the /metrics request itself")
        let unknown = try await client.request(.GET, "/v1/session", bearer: "a-token-nobody-was-given")
        #expect(unknown.status == 401)
        let errors = String(decoding: try await client.request(.GET, "/metrics").body, as: UTF8.self)
        // Counted under the status it was answered with (Hummingbird's middleware counted Orchard's errors as 500s).
        #expect(errors.contains(#"hb_requests{http_route="/v1/session",http_request_method="GET",http_response_status_code="401"} 1"#))
        #expect(errors.contains(#"hb_request_errors{http_route="/v1/session",http_request_method="GET",error_type="401"} 1"#))
        #expect(!errors.contains(#"http_response_status_code="500"} 1"#), "\(errors)")
        #expect(serve.logText.contains("APPLE_BASE_URL is not Apple's"))
        for secret in [user.sub, user.email ?? "-", token] {
            #expect(!serve.logText.contains(secret), "a secret reached the log")
        }

        let listed = try await OrchardProcess.runInBackground(["accounts", "list"], environment: setup.environment)
        #expect(listed.standardOutput.contains(id))
        // The account's history for an operator: the sign-in, as a table and as the API's EVENT objects.
        let history = try await OrchardProcess.runInBackground(["accounts", "history", id, "--json"], environment: setup.environment)
        #expect(history.status == 0, "\(history.standardError)")
        let events = try JSONSerialization.jsonObject(with: Data(history.standardOutput.utf8)) as? [[String: Any]]
        #expect(events?.map { $0["type"] as? String } == ["signed_in"], "\(history.standardOutput)")
        #expect(events?.first?["session_id"] as? String != nil)
        let table = try await OrchardProcess.runInBackground(["accounts", "history", id], environment: setup.environment)
        #expect(table.standardOutput.contains("\tsigned_in\t"), "\(table.standardOutput)")
        let nobody = try await OrchardProcess.runInBackground(["accounts", "history", "acct_nobody"], environment: setup.environment)
        #expect(nobody.status == 3)
        #expect(nobody.standardError.contains("not_found"))
        let deleted = try await OrchardProcess.runInBackground(["accounts", "delete", id], environment: setup.environment)
        #expect(deleted.status == 0, "\(deleted.standardError)")
        // Revoked within the 5 s wait, or (on a loaded machine) queued and revoked by the running server's worker.
        let revokedInline = deleted.standardOutput.contains("apple_revocation: revoked")
        #expect(revokedInline || deleted.standardOutput.contains("apple_revocation: pending"))
        #expect(await eventually { setup.emulator.calls(to: .revoke).contains { $0.status == 200 } })
        let drained = await eventually {
            (try? await OrchardProcess.runInBackground(["accounts", "revocations"], environment: setup.environment))?.standardOutput
                .contains("(none pending)") == true
        }
        #expect(drained)
        // Seen accepted by the command: Apple was asked once. Answered "pending", the command's own call may have reached
        // Apple after its wait ended, and the server's retry then asks again (revocation is at least once; Apple's
        // revoke is idempotent).
        if revokedInline {
            #expect(setup.emulator.calls(to: .revoke).filter { $0.status == 200 }.count == 1)
        }
        let session = try await client.request(.GET, "/v1/session", bearer: token)
        #expect(session["reason"] == "account_deleted")
        let missing = try await OrchardProcess.runInBackground(["accounts", "delete", id], environment: setup.environment)
        #expect(missing.status == 3)

        // Several at once: each deleted in turn, the missing one reported, exit 3, progress lines on standard error.
        var more: [String] = []
        for _ in 0..<2 {
            let signIn = try await client.signIn(setup.emulator.makeUser(), clientID: "com.example.orchard.app").response
            more.append(try #require((signIn.json["account"] as? [String: Any])?["id"] as? String))
        }
        let several = try await OrchardProcess.runInBackground(["accounts", "delete", more[0], id, more[1]], environment: setup.environment)
        #expect(several.status == 3, "\(several)")
        #expect(several.standardOutput.contains("deleted \(more[0])") && several.standardOutput.contains("deleted \(more[1])"))
        #expect(several.standardError.contains("\(id): not_found"), "\(several.standardError)")
        #expect(several.standardError.contains("3/3 accounts"))
        let after = try await OrchardProcess.runInBackground(["accounts", "list"], environment: setup.environment)
        #expect(!after.standardOutput.contains(more[0]) && !after.standardOutput.contains(more[1]))
        #expect(await serve.terminate() == 0)
    }

    @Test("with a 2-second validation interval, revoking the app at Apple signs the user out of a running server")
    func liveRefreshValidation() async throws {
        let setup = try await Setup.start()
        defer { Task { await setup.stop() } }
        var environment = setup.environment
        environment["ORCHARD_REFRESH_VALIDATION_INTERVAL"] = "2"
        let serve = try await ServeProcess.start(environment: environment, logDirectory: setup.directory.path, http: setup.http)
        let client = setup.client(serve)
        let ada = setup.emulator.makeUser()
        let bob = setup.emulator.makeUser()
        let adaToken = try #require(
            (try await client.signIn(ada, clientID: "com.example.orchard.app").response.json["session"] as? [String: Any])?["token"] as? String
        )
        let bobToken = try #require(
            (try await client.signIn(bob, clientID: "com.example.orchard.app").response.json["session"] as? [String: Any])?["token"] as? String
        )
        #expect(await eventually { setup.emulator.calls(to: .token).filter { $0.grantType == "refresh_token" }.count >= 2 })
        _ = setup.emulator.revokeGrant(sub: ada.sub)
        let signedOut = await eventually {
            (try? await client.request(.GET, "/v1/session", bearer: adaToken))?["reason"] == "apple_credential_revoked"
        }
        #expect(signedOut, "\(serve.logText)")
        #expect(try await client.request(.GET, "/v1/session", bearer: bobToken).status == 200)
        // Never more than once per interval per account: successful validations of one token are at least 2 s apart.
        let bobValidations = setup.emulator.calls(to: .token).filter { $0.grantType == "refresh_token" && $0.status == 200 }
            .filter { call in setup.emulator.issuedTokens(sub: bob.sub).contains(call.refreshToken ?? "") }.map(\.time)
        for (earlier, later) in zip(bobValidations, bobValidations.dropFirst()) {
            #expect(later.timeIntervalSince(earlier) >= 1.9)
        }
        #expect(await serve.terminate() == 0)
    }
}
