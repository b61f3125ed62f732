import Accounts
import AppleIDEmulator
import Foundation
import Logging
import NIOHTTP1
import OrchardServer
import OrchardTesting
import SQLKit
import Storage
import Testing

/// The operator API on its private listener: who may use it, every route of the contract's table with its bad input,
/// the audit log, and what operators see of Apple's notifications.
@Suite("The operator API on the private listener")
struct OperatorTests {
    /// The operator listener of a harness, and an operator's token.
    struct Admin: Sendable {
        let h: OrchardHarness
        let base: String
        let token: String
        let receiver: WebhookReceiver

        func request(
            _ method: HTTPMethod,
            _ path: String,
            bearer: String?? = .none,
            headers: [(String, String)] = [],
            body: Data? = nil
        ) async throws -> TestResponse {
            let credential: String? =
                switch bearer {
                case .none: token
                case .some(let given): given
                }
            return try await h.request(method, base + path, body: body, headers: headers, bearer: credential)
        }

        /// Adds an operator straight through the lifecycle's type, as `orchard operators add` does, and returns its token.
        func addOperator(_ name: String) async throws -> String {
            try await Self.operators(h).add(name: name)
        }

        static func operators(_ h: OrchardHarness) -> Operators {
            let keeper = SessionKeeper(database: h.database, backend: h.testDatabase.sessionBackend, answering: false, logger: Logger(label: "test"))
            return Operators(store: SQLAccountStore(keeper: keeper), clock: h.clock, random: SystemRandomSource())
        }
    }

    /// Runs `body` with Orchard serving the operator listener, telling a webhook receiver about lifecycle events.
    static func withAdmin(
        jobs: JobDriving = .background,
        webhookRetryWindow: Duration? = nil,
        rateLimitPerMinute: Int = 0,
        _ body: (Admin) async throws -> Void
    ) async throws {
        let receiver = try await WebhookReceiver.start()
        let port = try await ServeProcess.freePort()
        do {
            try await OrchardHarness.with(
                configure: {
                    $0.listener.adminPort = port
                    $0.webhooks.urls = [URL(string: receiver.url)!]
                    $0.webhooks.secret = OrchardHarness.webhookSecret
                    $0.lifecycle.webhookRetryWindow = webhookRetryWindow ?? $0.lifecycle.webhookRetryWindow
                    $0.listener.rateLimitPerMinute = rateLimitPerMinute
                },
                jobs: jobs,
                { h in
                    let token = try await Admin.operators(h).add(name: "ada")
                    try await body(Admin(h: h, base: "http://127.0.0.1:\(port)", token: token, receiver: receiver))
                }
            )
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    static func accountID(_ admin: Admin, session token: String) async throws -> String {
        let session = try await admin.h.request(.GET, "/v1/session", bearer: token)
        return try #require((session.json["account"] as? [String: Any])?["id"] as? String)
    }

    @Test("the public listener answers every /admin path 404 not_found; without ORCHARD_ADMIN_PORT nothing serves them")
    func notOnThePublicListener() async throws {
        try await Self.withAdmin { admin in
            for path in ["/admin", "/admin/v1/accounts?q=x", "/admin/login", "/admin/v1/audit"] {
                let response = try await admin.h.request(.GET, path, bearer: admin.token)
                #expect(response.status == 404, "\(path)")
                #expect(response.code == "not_found")
            }
            #expect(try await admin.request(.GET, "/admin/v1/audit").status == 200)
        }
        try await OrchardHarness.with(
            configure: { _ in },
            { h in
                let response = try await h.request(.GET, "/admin/v1/audit")
                #expect(response.status == 404)
            }
        )
    }

    @Test("a missing, wrong or removed token is 401 operator_unauthorized, at once; tokens and sessions never open each other's routes")
    func whoMayUseIt() async throws {
        try await Self.withAdmin { admin in
            let missing = try await admin.request(.GET, "/admin/v1/audit", bearer: .some(nil))
            #expect(missing.status == 401)
            #expect(missing.code == "operator_unauthorized")
            for wrong in ["orchard_op_nope", String(repeating: "a", count: 5000), admin.token + "x", "a\u{e9}b"] {
                let response = try await admin.request(.GET, "/admin/v1/audit", bearer: wrong)
                #expect(response.status == 401, "\(wrong.prefix(20))")
                #expect(response.code == "operator_unauthorized")
            }
            // A user's session is no operator; an operator's token opens no user route.
            let session = try await admin.h.signUp(admin.h.emulator.makeUser())
            #expect(try await admin.request(.GET, "/admin/v1/audit", bearer: session).code == "operator_unauthorized")
            let asUser = try await admin.h.request(.GET, "/v1/session", bearer: admin.token)
            #expect(asUser.status == 401)
            // Removal: the very next request is refused.
            let grace = try await admin.addOperator("grace")
            #expect(try await admin.request(.GET, "/admin/v1/delivery", bearer: grace).status == 200)
            try await Admin.operators(admin.h).remove(name: "grace")
            #expect(try await admin.request(.GET, "/admin/v1/delivery", bearer: grace).code == "operator_unauthorized")
            // Only a hash of each token is stored.
            for file in try await admin.h.databaseBytes() {
                #expect(file.bytes.range(of: Data(admin.token.utf8)) == nil, "an operator token in \(file.name)")
            }
            #expect(try await admin.h.rowCount("operators") == 1)
        }
    }

    @Test("search finds an account by id, by email whatever its letter case, and by Apple sub; bad q is invalid_request")
    func search() async throws {
        try await Self.withAdmin { admin in
            let user = admin.h.emulator.makeUser(email: "Grace.Hopper@Example.com", isPrivateEmail: false)
            let token = try await admin.h.signUp(user)
            let id = try await Self.accountID(admin, session: token)
            _ = try await admin.h.signUp(admin.h.emulator.makeUser())
            for query in [id, "grace.hopper@example.com", "GRACE.HOPPER@EXAMPLE.COM", user.sub] {
                let encoded = try #require(query.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
                let found = try await admin.request(.GET, "/admin/v1/accounts?q=\(encoded)")
                #expect(found.status == 200)
                let accounts = try #require(found.json["accounts"] as? [[String: Any]])
                #expect(accounts.map { $0["id"] as? String } == [id], "\(query)")
            }
            #expect((try await admin.request(.GET, "/admin/v1/accounts?q=nobody%40example.com").json["accounts"] as? [Any])?.isEmpty == true)
            for bad in [
                "/admin/v1/accounts", "/admin/v1/accounts?q=", "/admin/v1/accounts?q=\(String(repeating: "x", count: 400))",
                "/admin/v1/accounts?q=a%00b",
            ] {
                let response = try await admin.request(.GET, bad)
                #expect(response.status == 400, "\(bad.prefix(40))")
                #expect(response.code == "invalid_request")
            }
            // The search string is in neither the audit log nor the log.
            let audit = try await admin.request(.GET, "/admin/v1/audit?limit=100")
            #expect(!String(decoding: audit.body, as: UTF8.self).lowercased().contains("grace.hopper"))
            #expect(!String(decoding: audit.body, as: UTF8.self).contains(user.sub))
            try await admin.h.checkLogsHoldNoSecrets(also: ["grace.hopper@example.com", "Grace.Hopper@Example.com", user.sub])
        }
    }

    @Test("an account's page: the account, its sessions without current, its last events and transfer state; unknown ids are not_found")
    func accountPage() async throws {
        try await Self.withAdmin { admin in
            let user = admin.h.emulator.makeUser()
            let phone = try await admin.h.signUp(user, device: "Ada's <b>iPhone</b>")
            _ = try await admin.h.signUp(user, device: "Laptop")
            let id = try await Self.accountID(admin, session: phone)
            let page = try await admin.request(.GET, "/admin/v1/accounts/\(id)")
            #expect(page.status == 200)
            #expect((page.json["account"] as? [String: Any])?["id"] as? String == id)
            let sessions = try #require(page.json["sessions"] as? [[String: Any]])
            #expect(sessions.count == 2)
            #expect(sessions.allSatisfy { $0["current"] == nil && $0["id"] is String })
            #expect(Set(sessions.compactMap { $0["device"] as? String }) == ["Ada's <b>iPhone</b>", "Laptop"])
            #expect((page.json["events"] as? [[String: Any]])?.count == 2)
            #expect(page.json["transfer"] == nil)
            // An account on its way to another team (TN3159) shows where its transfer stands, in the API and the console.
            let at = Int64(admin.h.clock.now().timeIntervalSince1970 * 1_000)
            try await admin.h.database.withDatabase { db in
                try await db.raw(
                    """
                    INSERT INTO transfer_exports (account_id, client_id, target_team, state, attempts, last_error, updated_at)
                    VALUES (\(bind: id), 'com.example.orchard.app', 'TEAMBBBBBB', 'failed', 2, 'apple_unavailable', \(bind: at))
                    """
                ).run()
            }
            let transferring = try await admin.request(.GET, "/admin/v1/accounts/\(id)")
            let transfer = try #require(transferring.json["transfer"] as? [String: Any])
            #expect(transfer["side"] as? String == "sending")
            #expect(transfer["state"] as? String == "failed")
            #expect(transfer["attempts"] as? Int == 2)
            #expect(transfer["last_error"] as? String == "apple_unavailable")
            #expect(transfer["updated_at"] is String)
            let console = try await admin.request(.GET, "/admin/accounts/\(id)")
            #expect(String(decoding: console.body, as: UTF8.self).contains("App transfer (sending side): failed"))
            for unknown in ["acct_00000000000000000000000000000000", "nope", "%2e%2e", String(repeating: "z", count: 200), "a%20b"] {
                let response = try await admin.request(.GET, "/admin/v1/accounts/\(unknown)")
                #expect(response.status == 404, "\(unknown.prefix(20))")
                #expect(response.code == "not_found")
            }
        }
    }

    @Test("ending an account's sessions refuses each at its next request (signed_out), its history says operator; deleting is the operator's")
    func endSessionsAndDelete() async throws {
        try await Self.withAdmin { admin in
            let user = admin.h.emulator.makeUser()
            let phone = try await admin.h.signUp(user)
            let laptop = try await admin.h.signUp(user)
            let other = try await admin.h.signUp(admin.h.emulator.makeUser())
            let id = try await Self.accountID(admin, session: phone)
            let ended = try await admin.request(.DELETE, "/admin/v1/accounts/\(id)/sessions")
            #expect(ended.status == 200)
            #expect(ended.json["ended"] as? Int == 2)
            for token in [phone, laptop] {
                let refused = try await admin.h.request(.GET, "/v1/session", bearer: token)
                #expect(refused.status == 401)
                #expect(refused["reason"] == "signed_out")
            }
            #expect(try await admin.h.request(.GET, "/v1/session", bearer: other).status == 200)
            let events = try #require(try await admin.request(.GET, "/admin/v1/accounts/\(id)").json["events"] as? [[String: Any]])
            #expect(events.filter { $0["type"] as? String == "signed_out" }.map { $0["reason"] as? String } == ["operator", "operator"])
            #expect(try await admin.request(.DELETE, "/admin/v1/accounts/nope/sessions").code == "not_found")

            let deleted = try await admin.request(.DELETE, "/admin/v1/accounts/\(id)")
            #expect(deleted.status == 200)
            #expect(deleted.json["deleted"] as? Bool == true)
            #expect(deleted["apple_revocation"] == "revoked")
            #expect(await eventually { admin.receiver.delivered.contains { $0.json["type"] as? String == "account.deleted" } })
            let hook = try #require(admin.receiver.delivered.first { $0.json["type"] as? String == "account.deleted" })
            #expect(hook.json["reason"] as? String == "operator")
            #expect(try await admin.request(.DELETE, "/admin/v1/accounts/\(id)").code == "not_found")
            #expect(try await admin.request(.GET, "/admin/v1/accounts/\(id)").code == "not_found")
            // The audit log keeps what was done to it, without anything personal, after the account is gone.
            let audit = try #require(try await admin.request(.GET, "/admin/v1/audit?limit=100").json["entries"] as? [[String: Any]])
            let deletion = try #require(audit.last { $0["method"] as? String == "DELETE" && $0["route"] as? String == "/admin/v1/accounts/{id}" })
            #expect(deletion["account_id"] as? String == id)
            #expect(deletion["operator"] as? String == "ada")
            #expect(deletion["status"] as? Int == 200)
            #expect(audit.contains { $0["route"] as? String == "/admin/v1/accounts/{id}/sessions" && $0["status"] as? Int == 200 })
        }
    }

    @Test("revocations: pending through an outage, failed when Apple refuses the key, manual_required with no token; bad state is invalid_request")
    func revocations() async throws {
        try await Self.withAdmin(jobs: .byTest) { admin in
            let h = admin.h
            let held = try await h.signUp(h.emulator.makeUser())
            let heldID = try await Self.accountID(admin, session: held)
            h.emulator.injectFailure(endpoint: .revoke, failure: .status(503), count: 1)
            #expect(try await admin.request(.DELETE, "/admin/v1/accounts/\(heldID)")["apple_revocation"] == "pending")
            let pending = try #require(try await admin.request(.GET, "/admin/v1/revocations?state=pending").json["revocations"] as? [[String: Any]])
            #expect(pending.map { $0["account_id"] as? String } == [heldID])
            #expect(pending.first?["state"] as? String == "pending")
            #expect(pending.first?["deleted_at"] is String)
            #expect((pending.first?["attempts"] as? Int ?? 0) >= 1)
            // Apple refuses Orchard's client: it waits on the operator.
            let refused = try await h.signUp(h.emulator.makeUser())
            let refusedID = try await Self.accountID(admin, session: refused)
            h.emulator.injectFailure(endpoint: .revoke, failure: .appleError("invalid_client"), count: 1)
            #expect(try await admin.request(.DELETE, "/admin/v1/accounts/\(refusedID)")["apple_revocation"] == "pending")
            let failed = try #require(try await admin.request(.GET, "/admin/v1/revocations?state=failed").json["revocations"] as? [[String: Any]])
            #expect(failed.map { $0["account_id"] as? String } == [refusedID])
            #expect(failed.first?["last_error"] as? String == "apple_client_rejected")
            // No token held: manual_required, and it stays listed.
            let none = try await h.signUp(h.emulator.makeUser())
            let noneID = try await Self.accountID(admin, session: none)
            try await h.database.withDatabase { db in
                try await db.raw("UPDATE accounts SET sealed_refresh_token = NULL, sealed_access_token = NULL WHERE id = \(bind: noneID)").run()
            }
            #expect(try await admin.request(.DELETE, "/admin/v1/accounts/\(noneID)")["apple_revocation"] == "manual_required")
            let manual = try #require(
                try await admin.request(.GET, "/admin/v1/revocations?state=manual_required").json["revocations"] as? [[String: Any]]
            )
            #expect(manual.map { $0["account_id"] as? String } == [noneID])
            let all = try #require(try await admin.request(.GET, "/admin/v1/revocations").json["revocations"] as? [[String: Any]])
            #expect(Set(all.compactMap { $0["account_id"] as? String }) == [heldID, refusedID, noneID])
            for bad in ["done", "", "PENDING"] {
                #expect(try await admin.request(.GET, "/admin/v1/revocations?state=\(bad)").code == "invalid_request")
            }
            // The key mended, an operator retries the failed one now (the console's Retry), not when its lease runs out;
            // only a failed revocation has the button.
            let console = String(decoding: try await admin.request(.GET, "/admin/revocations").body, as: UTF8.self)
            #expect(console.components(separatedBy: "class=\"retry\"").count == 2, "one Retry, the failed revocation's")
            let action = try #require(
                console.range(of: #"/admin/revocations/rev_[0-9a-z]+/retry"#, options: .regularExpression).map { String(console[$0]) }
            )
            #expect(try await admin.request(.POST, action).status == 303)
            await h.runJobs(.revocations)
            #expect((try await admin.request(.GET, "/admin/v1/revocations?state=failed").json["revocations"] as? [Any])?.isEmpty == true)
            let stillPending = try await admin.request(.GET, "/admin/v1/revocations?state=pending").json["revocations"] as? [[String: Any]]
            #expect(stillPending?.map { $0["account_id"] as? String } == [heldID], "the pending one keeps its schedule")
            #expect(try await admin.request(.POST, action).status == 404, "no longer a failed revocation")
            #expect(try await admin.request(.POST, "/admin/revocations/rev_nope/retry").status == 404)
            // Apple recovers: the revocations leave the lists. The claim first records the backlog it found (the gauges
            // the alert rules read): the one still waiting for Apple (manual_required waits for no one), an hour old.
            h.clock.advance(by: 3_600)
            await h.runJobs(.revocations)
            #expect(h.gaugeValues("orchard_revocations_pending").contains(1), "\(h.gaugeValues("orchard_revocations_pending"))")
            let oldest = h.gaugeValues("orchard_revocation_oldest_pending_seconds")
            // (The deletions' times are kept in milliseconds.)
            #expect(oldest.contains { $0 >= 3_599 && $0 < 3_700 }, "\(oldest)")
            await h.runJobs(.revocations)
            #expect(h.gaugeValues("orchard_revocations_pending").last == 0)
            #expect(h.gaugeValues("orchard_revocation_oldest_pending_seconds").last == 0)
            #expect((try await admin.request(.GET, "/admin/v1/revocations?state=pending").json["revocations"] as? [Any])?.isEmpty == true)
            #expect((try await admin.request(.GET, "/admin/v1/revocations?state=failed").json["revocations"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("a failed webhook is listed with its receiver's status and redacted URL, and a retry sends the same webhook-id")
    func webhookRedrive() async throws {
        try await Self.withAdmin(webhookRetryWindow: .seconds(60)) { admin in
            admin.receiver.setDown(true)
            let token = try await admin.h.signUp(admin.h.emulator.makeUser())
            let id = try await Self.accountID(admin, session: token)
            #expect(try await admin.h.request(.DELETE, "/v1/account", bearer: token).status == 200)
            // The first attempt fails; past the retry window, the next one gives up.
            #expect(await eventually { admin.receiver.attempts.count == 1 })
            admin.h.clock.advance(by: 3_600)
            var failed: [[String: Any]] = []
            #expect(
                await eventually {
                    failed = (try? await admin.request(.GET, "/admin/v1/webhooks?state=failed").json["deliveries"] as? [[String: Any]]) ?? []
                    return failed.count == 1
                }
            )
            // The gauge the alert rule reads: one given up, waiting for an operator.
            #expect(await eventually { admin.h.gaugeValues("orchard_webhooks_failed").last == 1 })
            let delivery = try #require(failed.first)
            #expect(delivery["type"] as? String == "account.deleted")
            #expect(delivery["account_id"] as? String == id)
            #expect(delivery["last_status"] as? Int == 503)
            #expect(delivery["failed_at"] is String)
            let deliveryID = try #require(delivery["id"] as? String)
            let eventID = try #require(delivery["event_id"] as? String)
            #expect(try await admin.request(.GET, "/admin/v1/webhooks?state=pending").code == "invalid_request")
            for unknown in ["whd_00000000000000000000000000000000", "nope"] {
                #expect(try await admin.request(.POST, "/admin/v1/webhooks/\(unknown)/retry").code == "not_found")
            }
            admin.receiver.setDown(false)
            let retried = try await admin.request(.POST, "/admin/v1/webhooks/\(deliveryID)/retry")
            #expect(retried.status == 202)
            #expect(await eventually { admin.receiver.delivered.count == 1 })
            #expect(admin.receiver.delivered.first?.headers["webhook-id"] == eventID)
            #expect(await eventually { admin.h.gaugeValues("orchard_webhooks_failed").last == 0 })
            #expect((try await admin.request(.GET, "/admin/v1/webhooks").json["deliveries"] as? [Any])?.isEmpty == true)
            // Retrying what is no longer failed is not_found.
            #expect(try await admin.request(.POST, "/admin/v1/webhooks/\(deliveryID)/retry").code == "not_found")
        }
    }

    @Test("notifications: newest first with outcome, account and duplicates; delivery counts per client id; the metrics; paging")
    func notificationsAndDelivery() async throws {
        try await Self.withAdmin(jobs: .byTest) { admin in
            let h = admin.h
            let user = h.emulator.makeUser()
            let token = try await h.signUp(user)
            let id = try await Self.accountID(admin, session: token)
            let disabled = try h.emulator.signNotification(type: "email-disabled", sub: user.sub, clientID: OrchardHarness.clientID)
            #expect(try await h.postNotification(disabled).status == 200)
            #expect(try await h.postNotification(disabled).status == 200)
            h.clock.advance(by: 1)
            let stranger = try h.emulator.signNotification(type: "consent-revoked", sub: "000000.unknown.0000", clientID: OrchardHarness.clientID)
            #expect(try await h.postNotification(stranger).status == 200)
            let listed = try #require(try await admin.request(.GET, "/admin/v1/notifications").json["notifications"] as? [[String: Any]])
            #expect(listed.map { $0["outcome"] as? String } == ["pending", "pending"])
            await h.runJobs(.notifications)
            let processed = try #require(try await admin.request(.GET, "/admin/v1/notifications").json["notifications"] as? [[String: Any]])
            #expect(processed.map { $0["type"] as? String } == ["consent-revoked", "email-disabled"])
            #expect(processed.map { $0["outcome"] as? String } == ["unknown_subject", "processed"])
            #expect(processed[1]["account_id"] as? String == id)
            #expect(processed[0]["account_id"] == nil)
            #expect(processed[1]["duplicates"] as? Int == 1)
            #expect(processed.allSatisfy { $0["team_id"] as? String == "TEAMID1234" && $0["client_id"] as? String == OrchardHarness.clientID })
            #expect(!String(decoding: try await admin.request(.GET, "/admin/v1/notifications").body, as: UTF8.self).contains(user.sub))
            // Paging: one at a time to the end; a cursor this server did not give is invalid_request.
            let first = try await admin.request(.GET, "/admin/v1/notifications?limit=1")
            let next = try #require(first["next"])
            let second = try await admin.request(.GET, "/admin/v1/notifications?limit=1&before=\(next)")
            #expect((second.json["notifications"] as? [[String: Any]])?.first?["type"] as? String == "email-disabled")
            #expect(second["next"] == nil)
            for bad in ["?limit=0", "?limit=101", "?limit=x", "?before=unknown-jti"] {
                #expect(try await admin.request(.GET, "/admin/v1/notifications\(bad)").code == "invalid_request", "\(bad)")
            }
            // Delivery: every configured client id, the counts, and a grant Apple ended that no notification announced.
            #expect(h.emulator.revokeGrant(sub: user.sub) >= 1)
            h.clock.advance(by: 86_400 + 3_600 + 5)
            await h.runJobs(.validations)
            let clients = try #require(try await admin.request(.GET, "/admin/v1/delivery").json["clients"] as? [[String: Any]])
            #expect(Set(clients.compactMap { $0["client_id"] as? String }) == [OrchardHarness.clientID, OrchardHarness.webClientID])
            let app = try #require(clients.first { $0["client_id"] as? String == OrchardHarness.clientID })
            #expect(app["team_id"] as? String == "TEAMID1234")
            #expect(app["last_received_at"] is String)
            #expect(app["received_24h"] as? Int == 0)
            #expect(app["received_7d"] as? Int == 2)
            #expect(app["duplicates_7d"] as? Int == 1)
            #expect(app["unknown_subject_7d"] as? Int == 1)
            #expect(app["revoked_without_notification_7d"] as? Int == 1)
            let web = try #require(clients.first { $0["client_id"] as? String == OrchardHarness.webClientID })
            #expect(web["received_7d"] as? Int == 0)
            #expect(web["last_received_at"] == nil)
            #expect(h.counted("orchard_notifications_duplicates_total", [("client_id", OrchardHarness.clientID)]) == 1)
            let last = h.gaugeValues("orchard_notifications_last_received_timestamp_seconds", [("client_id", OrchardHarness.clientID)]).last
            #expect(last.map { abs($0 - h.clock.now().timeIntervalSince1970) < 3 * 86_400 } == true)
        }
    }

    @Test("the audit log: every request before its answer, newest first, paged; nothing personal; it outlives the operator")
    func auditLog() async throws {
        try await Self.withAdmin { admin in
            let delivery = try await admin.request(.GET, "/admin/v1/delivery")
            #expect(delivery.header("Cache-Control") == "no-store", "an operator answer may hold personal data")
            // What a path that found nothing named may be an email: it stays out of the log.
            _ = try await admin.request(.GET, "/admin/v1/accounts/ada.lovelace@example.com")
            _ = try await admin.request(.GET, "/admin/v1/revocations?state=bad")
            let page = try await admin.request(.GET, "/admin/v1/audit?limit=2")
            let entries = try #require(page.json["entries"] as? [[String: Any]])
            #expect(entries.map { $0["route"] as? String } == ["/admin/v1/revocations", "/admin/v1/accounts/{id}"])
            #expect(entries.map { $0["status"] as? Int } == [400, 404])
            #expect(entries[1]["account_id"] == nil, "\(entries[1])")
            #expect(try await admin.h.rowCount("operator_audit WHERE account_id LIKE '%@%'") == 0)
            #expect(entries.allSatisfy { $0["operator"] as? String == "ada" && $0["method"] as? String == "GET" && $0["at"] is String })
            let older = try await admin.request(.GET, "/admin/v1/audit?limit=2&before=\(try #require(page["next"]))")
            #expect((older.json["entries"] as? [[String: Any]])?.first?["route"] as? String == "/admin/v1/delivery")
            // A change is recorded before it is made and completed with its answer: the account it concerned, its status.
            let user = try await admin.h.signUp(admin.h.emulator.makeUser())
            let id = try await Self.accountID(admin, session: user)
            #expect(try await admin.request(.DELETE, "/admin/v1/accounts/\(id)/sessions").status == 200)
            let latest = try #require((try await admin.request(.GET, "/admin/v1/audit?limit=2").json["entries"] as? [[String: Any]]))
            let change = try #require(latest.first { $0["method"] as? String == "DELETE" })
            #expect(change["status"] as? Int == 200 && change["account_id"] as? String == id, "\(change)")
            #expect(try await admin.h.rowCount("operator_audit WHERE status = 0") == 0, "an entry was left unanswered")
            for bad in ["?limit=0", "?limit=1000", "?before=aud_00000000000000000000000000000000", "?before=x"] {
                #expect(try await admin.request(.GET, "/admin/v1/audit\(bad)").code == "invalid_request", "\(bad)")
            }
            // A refused request by no operator is not recorded (an anonymous client stores nothing).
            let before = try await admin.h.rowCount("operator_audit")
            for _ in 0..<5 { _ = try await admin.request(.GET, "/admin/v1/delivery", bearer: "orchard_op_guess") }
            #expect(try await admin.h.rowCount("operator_audit") == before)
            try await Admin.operators(admin.h).remove(name: "ada")
            #expect(try await admin.h.rowCount("operator_audit WHERE operator = 'ada'") == before)
        }
    }

    @Test("the console login sets __Host-orchard_admin, opens the API, is refused from another origin, and ends at logout")
    func consoleLogin() async throws {
        try await Self.withAdmin(rateLimitPerMinute: 5) { admin in
            let form = [("Content-Type", "application/x-www-form-urlencoded")]
            let wrong = try await admin.request(.POST, "/admin/login", bearer: .some(nil), headers: form, body: Data("token=nope".utf8))
            #expect(wrong.status == 401)
            #expect(!wrong.setsCookie(OperatorCookie.name))
            let encoded = try #require(admin.token.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            let login = try await admin.request(.POST, "/admin/login", bearer: .some(nil), headers: form, body: Data("token=\(encoded)".utf8))
            #expect(login.status == 303)
            let setCookie = try #require(login.headers(named: "Set-Cookie").first { $0.hasPrefix(OperatorCookie.name + "=") })
            for attribute in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/", "Max-Age=43200"] {
                #expect(setCookie.contains(attribute), "\(attribute)")
            }
            let cookie = String(setCookie.prefix { $0 != ";" })
            #expect(!cookie.contains(admin.token))
            let withCookie = [("Cookie", cookie)]
            #expect(try await admin.request(.GET, "/admin/v1/delivery", bearer: .some(nil), headers: withCookie).status == 200)
            let user = try await admin.h.signUp(admin.h.emulator.makeUser())
            let id = try await Self.accountID(admin, session: user)
            let foreign = try await admin.request(
                .DELETE,
                "/admin/v1/accounts/\(id)/sessions",
                bearer: .some(nil),
                headers: withCookie + [("Origin", "https://evil.example")]
            )
            #expect(foreign.status == 403)
            #expect(foreign.code == "csrf_rejected")
            // Browsers send Origin with every such request: one without it is not the console's.
            let none = try await admin.request(.DELETE, "/admin/v1/accounts/\(id)/sessions", bearer: .some(nil), headers: withCookie)
            #expect(none.code == "csrf_rejected")
            #expect(try await admin.h.request(.GET, "/v1/session", bearer: user).status == 200)
            // Nor may another site sign this browser in as some operator (login CSRF).
            let planted = try await admin.request(
                .POST,
                "/admin/login",
                bearer: .some(nil),
                headers: form + [("Origin", "https://evil.example")],
                body: Data("token=\(encoded)".utf8)
            )
            #expect(planted.code == "csrf_rejected")
            #expect(!planted.setsCookie(OperatorCookie.name))
            let own = try await admin.request(
                .DELETE,
                "/admin/v1/accounts/\(id)/sessions",
                bearer: .some(nil),
                headers: withCookie + [("Origin", admin.base)]
            )
            #expect(own.status == 200)
            let logout = try await admin.request(.POST, "/admin/logout", bearer: .some(nil), headers: withCookie + [("Origin", admin.base)])
            #expect(logout.status == 303)
            #expect(logout.clearsCookie(OperatorCookie.name))
            #expect(try await admin.request(.GET, "/admin/v1/delivery", bearer: .some(nil), headers: withCookie).code == "operator_unauthorized")
            // Failed logins share the anonymous budget: past it, 429 before the token is even looked at.
            var statuses: [Int] = []
            for _ in 0..<6 {
                statuses.append(
                    try await admin.request(.POST, "/admin/login", bearer: .some(nil), headers: form, body: Data("token=guess".utf8)).status
                )
            }
            #expect(statuses.contains(429))
            // The console's pages: a strict CSP, no script; without a login, the sign-in form.
            let front = try await admin.request(.GET, "/admin", bearer: .some(nil))
            #expect(front.status == 200)
            let csp = try #require(front.header("Content-Security-Policy"))
            #expect(csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'none'") && !csp.contains("unsafe-inline"))
            #expect(String(decoding: front.body, as: UTF8.self).contains("id=\"token\""))
            #expect(try await admin.request(.GET, "/admin/audit", bearer: .some(nil)).status == 303)
        }
    }

    @Test("a console signed in as an operator who is removed meanwhile is refused from its next request on")
    func consoleOfRemovedOperator() async throws {
        try await Self.withAdmin { admin in
            let form = [("Content-Type", "application/x-www-form-urlencoded")]
            let encoded = try #require(admin.token.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            let login = try await admin.request(.POST, "/admin/login", bearer: .some(nil), headers: form, body: Data("token=\(encoded)".utf8))
            let setCookie = try #require(login.headers(named: "Set-Cookie").first { $0.hasPrefix(OperatorCookie.name + "=") })
            let signedIn = [("Cookie", String(setCookie.prefix { $0 != ";" }))]
            #expect(try await admin.request(.GET, "/admin/v1/delivery", bearer: .some(nil), headers: signedIn).status == 200)
            #expect(try await admin.request(.GET, "/admin/audit", bearer: .some(nil), headers: signedIn).status == 200)
            try await Admin.operators(admin.h).remove(name: "ada")
            #expect(try await admin.request(.GET, "/admin/v1/delivery", bearer: .some(nil), headers: signedIn).code == "operator_unauthorized")
            #expect(try await admin.request(.GET, "/admin/audit", bearer: .some(nil), headers: signedIn).status == 303, "to the sign-in form")
        }
    }

    @Test("credentials that open nothing draw from the anonymous budget: past it, 429 before any lookup; an operator's own requests draw nothing")
    func failedCredentialsBudgeted() async throws {
        try await Self.withAdmin(rateLimitPerMinute: 5) { admin in
            for _ in 0..<10 { #expect(try await admin.request(.GET, "/admin/v1/delivery").status == 200) }
            var statuses: [Int] = []
            for _ in 0..<8 { statuses.append(try await admin.request(.GET, "/admin/v1/delivery", bearer: "orchard_op_guess").status) }
            #expect(statuses.prefix(5).allSatisfy { $0 == 401 }, "\(statuses)")
            #expect(statuses.suffix(3).allSatisfy { $0 == 429 }, "\(statuses)")
            let cookie = try await admin.request(
                .GET,
                "/admin/v1/delivery",
                bearer: .some(nil),
                headers: [("Cookie", "\(OperatorCookie.name)=guess")]
            )
            #expect(cookie.status == 429)
            #expect(cookie.header("Retry-After") != nil)
        }
    }

    @Test("nothing a user controls puts markup into the console: a device label and a name are escaped")
    func consoleEscapes() async throws {
        try await Self.withAdmin { admin in
            let user = admin.h.emulator.makeUser(email: "x\"><script>alert(1)</script>@example.com", isPrivateEmail: false)
            let token = try await admin.h.signIn(
                user,
                userDetails: ["name": ["firstName": "<img src=x onerror=alert(1)>", "lastName": "</td>"]],
                device: "<script>alert(2)</script>"
            ).response
            let session = try #require((token.json["session"] as? [String: Any])?["token"] as? String)
            let id = try await Self.accountID(admin, session: session)
            let page = try await admin.request(.GET, "/admin/accounts/\(id)")
            #expect(page.status == 200)
            let html = String(decoding: page.body, as: UTF8.self)
            #expect(!html.contains("<script>"))
            #expect(!html.contains("<img"))
            #expect(html.contains("&lt;script&gt;alert(2)&lt;/script&gt;"))
            #expect(!html.contains("</td>\n") || html.components(separatedBy: "&lt;/td&gt;").count > 1)
        }
    }

    @Test("an account from before email hashes were kept is found by email once serve starts; vault rotate re-hashes it")
    func emailHashes() async throws {
        try await Self.withAdmin { admin in
            let user = admin.h.emulator.makeUser(email: "old.user@example.com", isPrivateEmail: false)
            let token = try await admin.h.signUp(user)
            let id = try await Self.accountID(admin, session: token)
            try await admin.h.database.withDatabase { db in try await db.raw("UPDATE accounts SET email_hash = NULL").run() }
            try await admin.h.database.withDatabase { db in try await db.raw("DELETE FROM orchard_settings WHERE name = 'email_hashes_filled'").run()
            }
            #expect((try await admin.request(.GET, "/admin/v1/accounts?q=old.user%40example.com").json["accounts"] as? [Any])?.isEmpty == true)
            let keeper = SessionKeeper(
                database: admin.h.database,
                backend: admin.h.testDatabase.sessionBackend,
                answering: false,
                logger: Logger(label: "test")
            )
            let store = SQLAccountStore(keeper: keeper)
            #expect(try await EmailHashBackfill(store: store, vault: TokenVault(keys: admin.h.configuration.vaultKeys)).run() == 1)
            let found = try await admin.request(.GET, "/admin/v1/accounts?q=OLD.USER%40example.com")
            #expect((found.json["accounts"] as? [[String: Any]])?.first?["id"] as? String == id)
            // After a rotation to a new key (the old one gone), the hash is the new key's.
            let newKey = VaultKey.generate(id: "test2")
            let rotating = TokenVault(keys: [newKey] + admin.h.configuration.vaultKeys)
            _ = try await VaultRotation(store: store, vault: rotating).rotate()
            let hash = try await admin.h.database.withDatabase { db in
                try await db.raw("SELECT email_hash FROM accounts WHERE id = \(bind: id)").first()?.decode(column: "email_hash", as: String.self)
            }
            #expect(hash == TokenVault(keys: [newKey]).emailHash("old.user@example.com"))
        }
    }
}
